// A release directory is complete or absent: it is assembled under a temp name beside releases/ and renamed into
// place, so a crash mid-copy never leaves a half release that `current` could point at.
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { walkFiles, type PackageSource, type ReleaseFile } from './package-source.js';

/** One line per file: path, kind, executable bit and content hash (or link target). Equal digests, equal trees. */
export function sourceDigest(source: PackageSource): string {
  return digestOf(source.files.map((file) => describeFile(file.path, file.link === undefined ? file.source : undefined, file.link)));
}

export function installedDigest(dir: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  return digestOf(
    walkFiles(dir).map((file) => {
      const path = relative(dir, file).split(sep).join('/');
      return lstatSync(file).isSymbolicLink() ? describeFile(path, undefined, readlinkSync(file)) : describeFile(path, file);
    }),
  );
}

function describeFile(path: string, contentPath: string | undefined, linkTarget?: string): string {
  if (linkTarget !== undefined) return `${path}\0link\0${linkTarget}`;
  const executable = (statSync(contentPath!).mode & 0o111) !== 0 ? 'x' : '-';
  const hash = createHash('sha256').update(readFileSync(contentPath!)).digest('hex');
  return `${path}\0${executable}\0${hash}`;
}

function digestOf(lines: string[]): string {
  return createHash('sha256').update(lines.sort().join('\n')).digest('hex');
}

/**
 * Copies the package into `target` (releases/<version>). Files are root's and world-readable (the service user
 * reads them; nobody but root writes them), whatever the umask of the shell that ran the install.
 */
export function writeRelease(source: PackageSource, target: string): void {
  const parent = dirname(target);
  mkdirSync(parent, { recursive: true, mode: 0o755 });
  const staging = join(parent, `.staging-${source.version}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(staging, { mode: 0o755 });
    chmodSync(staging, 0o755);
    for (const file of source.files) copyReleaseFile(file, staging);
    if (existsSync(target)) {
      // Same version, different files (a rebuilt package): swap the directories; the old one goes last.
      const old = join(parent, `.replaced-${source.version}-${randomBytes(4).toString('hex')}`);
      renameSync(target, old);
      renameSync(staging, target);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(staging, target);
    }
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

function copyReleaseFile(file: ReleaseFile, staging: string): void {
  const destination = join(staging, ...file.path.split('/'));
  ensureDir(dirname(destination), staging);
  if (file.link !== undefined) {
    symlinkSync(file.link, destination);
    return;
  }
  copyFileSync(file.source, destination);
  chmodSync(destination, (statSync(file.source).mode & 0o111) !== 0 ? 0o755 : 0o644);
}

function ensureDir(dir: string, top: string): void {
  if (existsSync(dir)) return;
  ensureDir(dirname(dir), top);
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
}

/** Leftovers of an interrupted copy: staging and replaced directories are never referenced by a link. */
export function removeStagingLeftovers(releasesDir: string): string[] {
  if (!existsSync(releasesDir)) return [];
  const removed: string[] = [];
  for (const name of readdirSync(releasesDir)) {
    if (name.startsWith('.staging-') || name.startsWith('.replaced-')) {
      rmSync(join(releasesDir, name), { recursive: true, force: true });
      removed.push(join(releasesDir, name));
    }
  }
  return removed;
}

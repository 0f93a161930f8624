// What a release is: the package as it runs. The files its package.json ships (`files`: bin, dist, systemd, …)
// plus the node_modules the bundle keeps external (scripts/build.mjs: better-sqlite3, a native addon) with their
// runtime dependencies; everything else is bundled into dist/.
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { PACKAGE_NAME, readManifest } from '../../lib/package-dir.js';
import { UNIT_NAMES, unitInRelease } from '../host/location.js';

/** A version becomes a directory name under releases/: no separators, no dot-only names. */
const VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;

interface RuntimeModule {
  name: string;
  /** The module that depends on this one; resolution starts there, so hoisted or nested layouts both work. */
  requiredBy: string | null;
  /** Which of the module's files run; the rest (sources, build objects, tests) stays behind. */
  keep: (relativePath: string) => boolean;
}

const RUNTIME_MODULES: readonly RuntimeModule[] = [
  {
    name: 'better-sqlite3',
    requiredBy: null,
    keep: (path) =>
      path === 'package.json' || path === 'LICENSE' || path.startsWith('lib/') || path === 'build/Release/better_sqlite3.node',
  },
  { name: 'bindings', requiredBy: 'better-sqlite3', keep: (path) => !path.startsWith('test/') },
  { name: 'file-uri-to-path', requiredBy: 'bindings', keep: (path) => !path.startsWith('test/') },
];

/** Relative, inside the release, to the shim it points at: the name ExecStart and /usr/local/bin use. */
export const RELEASE_BIN = join('bin', 'swarm-node');
export const RELEASE_BIN_TARGET = 'swarm-node.js';

export interface ReleaseFile {
  /** Path inside the release, with '/' separators. */
  path: string;
  /** Absolute source path, or a symlink's target when `link` is set. */
  source: string;
  link?: string;
}

export interface PackageSource {
  dir: string;
  version: string;
  files: ReleaseFile[];
}

/** Reads and checks a package directory (`install --from <dir>` or the running one). */
export function readPackageSource(packageDir: string): PackageSource {
  const dir = resolve(packageDir);
  const invalid = (why: string) =>
    new SvcError('usage', `${dir} is not a swarm-node package: ${why}`, {
      remedy: `Point --from at an unpacked ${PACKAGE_NAME} package (it has package.json, bin/, dist/ and systemd/).`,
    });
  const manifestPath = join(dir, 'package.json');
  if (!existsSync(manifestPath)) throw invalid('no package.json');
  const manifest = readManifest(manifestPath);
  if (manifest.name !== PACKAGE_NAME) throw invalid(`package.json names "${String(manifest.name)}"`);
  const version = manifest.version;
  if (typeof version !== 'string' || !VERSION_PATTERN.test(version) || version.includes('..')) {
    throw invalid(`package.json has no usable version ("${String(version)}")`);
  }
  for (const required of [join('bin', 'swarm-node.js'), join('dist', 'swarm-node.js'), ...UNIT_NAMES.map(unitInRelease)]) {
    if (!existsSync(join(dir, required))) throw invalid(`${required} is missing (a source checkout must be built first: npm run build)`);
  }

  const files: ReleaseFile[] = [{ path: 'package.json', source: manifestPath }];
  const shipped = Array.isArray(manifest.files) ? manifest.files.filter((entry): entry is string => typeof entry === 'string') : [];
  for (const entry of shipped) {
    if (entry.includes('*') || entry.startsWith('/') || entry.split('/').includes('..')) continue;
    const source = join(dir, entry);
    if (!existsSync(source)) continue;
    for (const file of walkFiles(source)) files.push({ path: toReleasePath(relative(dir, file)), source: file });
  }
  files.push(...runtimeModuleFiles(dir));
  // A release artifact ships bin/swarm-node as a wrapper that runs its own Node runtime (src/release/release-tree.ts);
  // a checkout has none, and gets the link to the script.
  if (!lstatIfPresent(join(dir, RELEASE_BIN))?.isFile())
    files.push({ path: toReleasePath(RELEASE_BIN), source: RELEASE_BIN_TARGET, link: RELEASE_BIN_TARGET });
  return { dir, version, files: dedupe(files).sort((a, b) => a.path.localeCompare(b.path)) };
}

function runtimeModuleFiles(packageDir: string): ReleaseFile[] {
  const resolvedDirs = new Map<string | null, string>([[null, packageDir]]);
  const files: ReleaseFile[] = [];
  for (const module of RUNTIME_MODULES) {
    const from = resolvedDirs.get(module.requiredBy)!;
    let moduleDir: string;
    try {
      moduleDir = dirname(createRequire(join(from, 'package.json')).resolve(`${module.name}/package.json`));
    } catch {
      throw new SvcError('usage', `${packageDir} lacks the runtime module ${module.name}`, {
        remedy: 'Install the package with its dependencies (npm ci) before installing it as a release.',
      });
    }
    resolvedDirs.set(module.name, moduleDir);
    for (const file of walkFiles(moduleDir)) {
      const inside = toReleasePath(relative(moduleDir, file));
      if (inside.startsWith('node_modules/') || !module.keep(inside)) continue;
      files.push({ path: `node_modules/${module.name}/${inside}`, source: file });
    }
  }
  return files;
}

/** Regular files and symlinks under `path` (itself, when it is a file). Ignores our own temp names. */
export function walkFiles(path: string): string[] {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.isFile() || stat.isSymbolicLink() ? [path] : [];
  const found: string[] = [];
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    found.push(...walkFiles(join(path, entry.name)));
  }
  return found;
}

function lstatIfPresent(path: string): ReturnType<typeof lstatSync> | undefined {
  return existsSync(path) ? lstatSync(path) : undefined;
}

function toReleasePath(path: string): string {
  return path.split(sep).join('/');
}

function dedupe(files: ReleaseFile[]): ReleaseFile[] {
  const byPath = new Map<string, ReleaseFile>();
  for (const file of files) byPath.set(file.path, file);
  return [...byPath.values()];
}

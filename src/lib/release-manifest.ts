// A release's manifest (docs/operations.md "Releases"): what the signature covers. Plain lines, not JSON, so that
// scripts/install.sh checks it with sed and sha256sum on a host that has no Node yet:
//
//   svc-swarm-node-release 1
//   version 0.1.0
//   platform linux-x64
//   runtime node v20.20.2            (or: runtime none, when the host brings its own Node)
//   artifact <sha256> <bytes> swarm-node-0.1.0-linux-x64.tar.gz
//   file <sha256> <bytes> <0755|0644> bin/swarm-node.js        (one per file, sorted, paths under the top directory)
//
// The artifact line binds the signed manifest to the tarball, so the download is checked before it is unpacked;
// the file lines check what was unpacked, and let an operator verify an installed release by hand.
import { createHash } from 'node:crypto';

export const MANIFEST_MAGIC = 'svc-swarm-node-release 1';
/**
 * The most a manifest may be, read before its signature is checked (docs/operations.md "Bounded downloads"): one
 * line per file, ~20 KB for a release with its runtime, so 1 MiB is fifty times that. scripts/install.sh has it too.
 */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/**
 * The most a release's tarball may be, whatever its signed manifest says: a ceiling, not the cap. A download is
 * capped at the signed size itself; this bounds what even a trusted key can make a node fetch (~35 MB today).
 */
export const MAX_ARTIFACT_BYTES = 256 * 1024 * 1024;
/** Versions become directory names (releases/<version>) and parts of URLs: no separators, no dot-only names. */
export const RELEASE_VERSION_PATTERN = /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/;
const PLATFORM_PATTERN = /^linux-(x64|arm64)$/;
const SHA256_PATTERN = /^[0-9a-f]{64}$/;
/** Paths inside the release: relative, '/'-separated, no `..`, nothing a shell or sha256sum would split. */
const PATH_PATTERN = /^[A-Za-z0-9@_.+-]+(?:\/[A-Za-z0-9@_.+-]+)*$/;

/** A version usable as a directory name and a part of a file name or URL: what the pattern allows, without `..`. */
export function isReleaseVersion(version: string): boolean {
  return RELEASE_VERSION_PATTERN.test(version) && !version.includes('..');
}

export interface ManifestFile {
  path: string;
  sha256: string;
  size: number;
  executable: boolean;
}

export interface ReleaseManifest {
  version: string;
  /** `linux-<process.arch>`. */
  platform: string;
  /** The Node.js runtime shipped in runtime/bin/node, `v20.20.2`; null when none is. */
  runtime: string | null;
  artifact: { name: string; sha256: string; size: number };
  files: ManifestFile[];
}

export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function hostPlatform(arch: string = process.arch): string {
  return `linux-${arch}`;
}

/** The top directory inside the tarball, and the stem of every file published beside it. */
export function releaseStem(version: string, platform: string): string {
  return `swarm-node-${version}-${platform}`;
}

/** The four files of a published release. */
export function releaseFileNames(
  version: string,
  platform: string,
): { artifact: string; sha256: string; manifest: string; signature: string } {
  const stem = releaseStem(version, platform);
  return { artifact: `${stem}.tar.gz`, sha256: `${stem}.tar.gz.sha256`, manifest: `${stem}.manifest`, signature: `${stem}.manifest.sig` };
}

export function isReleasePath(path: string): boolean {
  return PATH_PATTERN.test(path) && !path.split('/').some((part) => part === '.' || part === '..');
}

export function renderManifest(manifest: ReleaseManifest): string {
  const lines = [
    MANIFEST_MAGIC,
    `version ${manifest.version}`,
    `platform ${manifest.platform}`,
    `runtime ${manifest.runtime === null ? 'none' : `node ${manifest.runtime}`}`,
    `artifact ${manifest.artifact.sha256} ${manifest.artifact.size} ${manifest.artifact.name}`,
    ...[...manifest.files]
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      .map((file) => `file ${file.sha256} ${file.size} ${file.executable ? '0755' : '0644'} ${file.path}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** Parses a manifest; throws an Error saying which line is wrong (the caller words it for its user). */
export function parseManifest(text: string): ReleaseManifest {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines[0] !== MANIFEST_MAGIC) throw new Error(`not a swarm-node release manifest (its first line is not "${MANIFEST_MAGIC}")`);
  const fields = new Map<string, string>();
  const files: ManifestFile[] = [];
  const seen = new Set<string>();
  lines.slice(1).forEach((line, index) => {
    const bad = (why: string) => new Error(`manifest line ${index + 2}: ${why}`);
    const [key, ...rest] = line.split(' ');
    if (key === 'file') {
      const [sha256, size, mode, path, ...extra] = rest;
      if (extra.length > 0 || sha256 === undefined || !SHA256_PATTERN.test(sha256))
        throw bad('expected "file <sha256> <bytes> <mode> <path>"');
      if (!/^\d+$/.test(size ?? '') || (mode !== '0755' && mode !== '0644')) throw bad('a file needs its size and a mode of 0755 or 0644');
      if (path === undefined || !isReleasePath(path) || seen.has(path)) throw bad(`a bad or repeated path: ${JSON.stringify(path)}`);
      seen.add(path);
      files.push({ path, sha256, size: Number(size), executable: mode === '0755' });
      return;
    }
    if (key === undefined || rest.length === 0 || fields.has(key)) throw bad(`unexpected or repeated line "${line.slice(0, 80)}"`);
    fields.set(key, rest.join(' '));
  });
  const version = fields.get('version') ?? '';
  const platform = fields.get('platform') ?? '';
  const runtime = fields.get('runtime') ?? '';
  const [sha256 = '', size = '', name = '', ...extra] = (fields.get('artifact') ?? '').split(' ');
  if (!isReleaseVersion(version)) throw new Error(`the manifest's version is not usable: ${JSON.stringify(version)}`);
  if (!PLATFORM_PATTERN.test(platform))
    throw new Error(`the manifest's platform is not one of linux-x64, linux-arm64: ${JSON.stringify(platform)}`);
  if (runtime !== 'none' && !/^node v\d+\.\d+\.\d+$/.test(runtime))
    throw new Error(`the manifest's runtime line is not "node vX.Y.Z" or "none"`);
  const names = releaseFileNames(version, platform);
  if (!SHA256_PATTERN.test(sha256) || !/^\d+$/.test(size) || name !== names.artifact || extra.length > 0) {
    throw new Error(`the manifest's artifact line must be "artifact <sha256> <bytes> ${names.artifact}"`);
  }
  if (files.length === 0) throw new Error('the manifest lists no files');
  return {
    version,
    platform,
    runtime: runtime === 'none' ? null : runtime.slice('node '.length),
    artifact: { name, sha256, size: Number(size) },
    files,
  };
}

/**
 * Orders versions as semver does for the x.y.z core (a pre-release sorts before its release); parts that are not
 * numbers compare as text. Enough for "is this newer", the only question asked.
 */
export function compareVersions(a: string, b: string): number {
  const split = (version: string) => {
    const [core = '', pre] = version.split('+')[0]!.split(/-(.*)/s);
    return { core: core.split('.'), pre };
  };
  const left = split(a);
  const right = split(b);
  for (let index = 0; index < Math.max(left.core.length, right.core.length); index += 1) {
    const x = left.core[index] ?? '0';
    const y = right.core[index] ?? '0';
    const order = /^\d+$/.test(x) && /^\d+$/.test(y) ? Number(x) - Number(y) : x.localeCompare(y);
    if (order !== 0) return Math.sign(order);
  }
  if (left.pre === right.pre) return 0;
  if (left.pre === undefined) return 1;
  if (right.pre === undefined) return -1;
  return Math.sign(left.pre.localeCompare(right.pre, 'en', { numeric: true }));
}

// What a release artifact holds (docs/operations.md "Releases"): only what a node runs. From the built package
// (readPackageSource: the files package.json ships plus better-sqlite3's runtime files and its native addon) it keeps
// the CLI's bundle (dist/swarm-node.js and dist/cli/, without source maps), the reference agents and the docs sections
// they read, the systemd unit templates, the agents' system-call filters (seccomp/) and install.sh; it drops the
// svc-api bundle, the release builder and the rest of scripts/ and docs/. It adds a Node runtime (runtime/bin/node) with better-sqlite3's addon built for it, and a
// bin/swarm-node wrapper that runs the release with it, so the host needs no Node.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readPackageSource } from '../node/install/package-source.js';
import { readManifest } from '../lib/package-dir.js';
import { isReleasePath, sha256Hex, type ManifestFile } from '../lib/release-manifest.js';
import { SQLITE_ADDON_PATH } from './sqlite-addon.js';

export interface RuntimeChoice {
  /** The node binary to ship (release-runtime.ts: the registry's node-linux-<arch> at releaseRuntime.node). */
  binary: string;
  version: string;
  /** better-sqlite3's addon built for that binary, in place of the package's own. */
  addon: string;
  /** Strip symbols from the copy (binutils' strip), when strip is on PATH: a third smaller, same program. */
  strip: boolean;
}

export interface StagedTree {
  files: ManifestFile[];
  version: string;
}

/** The entry point ExecStart and /usr/local/bin run: the release's own runtime, else a node on PATH. */
export const RELEASE_WRAPPER = `#!/bin/sh
# swarm-node, as a release runs it: with the Node runtime it ships (runtime/bin/node), else the node on PATH.
here=$(dirname "$(readlink -f "$0")")
if [ -x "$here/../runtime/bin/node" ]; then
  exec "$here/../runtime/bin/node" "$here/swarm-node.js" "$@"
fi
exec node "$here/swarm-node.js" "$@"
`;

function kept(path: string): boolean {
  if (path.endsWith('.map')) return false;
  if (path.startsWith('dist/')) return path === 'dist/swarm-node.js' || path.startsWith('dist/cli/');
  if (path.startsWith('docs/')) return path.startsWith('docs/sections/');
  if (path.startsWith('scripts/')) return path === 'scripts/install.sh';
  if (path.startsWith('bin/')) return path === 'bin/swarm-node.js';
  return path !== 'package.json';
}

/** Writes the release's files under `target` (created) and returns each file's digest, size and mode. */
export function stageReleaseTree(
  packageDir: string,
  target: string,
  options: { version?: string; runtime: RuntimeChoice | null; engines: { node: string } },
): StagedTree {
  const source = readPackageSource(packageDir);
  const version = options.version ?? source.version;
  const files: ManifestFile[] = [];
  const write = (path: string, data: Buffer, executable: boolean) => {
    if (!isReleasePath(path)) throw new Error(`${path} cannot be named in a release manifest`);
    const destination = join(target, ...path.split('/'));
    mkdirSync(dirname(destination), { recursive: true, mode: 0o755 });
    writeFileSync(destination, data);
    chmodSync(destination, executable ? 0o755 : 0o644);
    files.push({ path, sha256: sha256Hex(data), size: data.length, executable });
  };

  const manifest = readManifest(join(source.dir, 'package.json')) as Record<string, unknown>;
  const releaseManifest = {
    name: manifest.name,
    version,
    description: 'svc swarm-node: the bare-metal agent-node runner (a release: the node alone)',
    license: manifest.license,
    private: true,
    type: 'module',
    // The Node this release runs on (its addon's ABI): bin/swarm-node.js and install.sh check a host's against it.
    engines: options.engines,
    // What `swarm-node install --from <this tree>` copies into releases/<version>/ (package-source.ts).
    files: ['agents', 'bin', 'dist', 'docs', 'kit', 'runtime', 'scripts', 'seccomp', 'systemd'],
  };
  write('package.json', Buffer.from(`${JSON.stringify(releaseManifest, null, 2)}\n`), false);
  for (const file of source.files) {
    if (file.link !== undefined || !kept(file.path)) continue;
    const from = file.path === SQLITE_ADDON_PATH && options.runtime !== null ? options.runtime.addon : file.source;
    write(file.path, readFileSync(from), (statSync(from).mode & 0o111) !== 0);
  }
  write('bin/swarm-node', Buffer.from(RELEASE_WRAPPER), true);
  if (options.runtime !== null) {
    const runtimePath = join(target, 'runtime', 'bin', 'node');
    mkdirSync(dirname(runtimePath), { recursive: true, mode: 0o755 });
    copyFileSync(options.runtime.binary, runtimePath);
    if (options.runtime.strip && hasStrip()) execFileSync('strip', [runtimePath], { stdio: 'ignore' });
    const data = readFileSync(runtimePath);
    write('runtime/bin/node', data, true);
  }
  return { files, version };
}

function hasStrip(): boolean {
  return ['/usr/bin/strip', '/usr/local/bin/strip', '/bin/strip'].some((path) => existsSync(path));
}

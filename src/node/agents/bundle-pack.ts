// Packs a bundle directory for upload (swarm-node agent upload): a gzip tar made the same way every time (names
// sorted, times, owners and gzip header zeroed, modes 0644/0755), so packing an unchanged directory again gives
// the same bytes and the same digest, and the upload is the idempotent repeat the service recognises. Anything but
// a regular file or a directory (a symlink, a socket) is refused here, before the service would refuse it. The
// agent kit (kit/swarm_kit: its JavaScript module and its Python package) goes into every bundle as swarm_kit/,
// this package's copy in place of any the directory holds, so that no agent carries a copy of its own to keep in step
// and a Python agent needs nothing but the host's python3 (docs/sections/agent-upload.md "The kit").
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MAX_BUNDLE_ENTRIES } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import { tarOf, type TarEntry } from '../../lib/tar-pack.js';
import { runningPackageDir } from '../../lib/package-dir.js';

/** Where the kit is in this package, and where it goes in a bundle. */
export const KIT_DIR = 'swarm_kit';

/** Directories an author's tools leave that are never part of an agent. */
const SKIPPED = new Set(['.git', 'node_modules', '.DS_Store']);

type PackEntry = TarEntry & { type: 'file' | 'directory' };

export async function packBundleDir(dir: string, packageDir = runningPackageDir()): Promise<Buffer> {
  const entries: PackEntry[] = [];
  const walk = (relative: string): void => {
    for (const name of readdirSync(join(dir, relative)).sort()) {
      if (SKIPPED.has(name) || (relative === '' && name === KIT_DIR)) continue;
      const path = relative === '' ? name : `${relative}/${name}`;
      const stat = lstatSync(join(dir, path));
      if (stat.isDirectory()) {
        entries.push({ name: `${path}/`, type: 'directory', mode: 0o755 });
        walk(path);
      } else if (stat.isFile()) {
        entries.push({ name: path, type: 'file', mode: (stat.mode & 0o111) !== 0 ? 0o755 : 0o644, data: readFileSync(join(dir, path)) });
      } else {
        throw new SvcError('bundle_invalid', `${join(dir, path)} is ${stat.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}: a bundle holds only regular files and directories`, {
          remedy: 'Copy the file the link points to into the bundle instead, or remove it.',
        });
      }
      if (entries.length > MAX_BUNDLE_ENTRIES) {
        throw new SvcError('payload_too_large', `${dir} holds more than ${MAX_BUNDLE_ENTRIES} files and directories`, { remedy: 'Keep the bundle to its code; leave data on the host.' });
      }
    }
  };
  walk('');
  const kitDir = join(packageDir, 'kit', KIT_DIR);
  const kit: PackEntry[] = [
    { name: `${KIT_DIR}/`, type: 'directory', mode: 0o755 },
    ...readdirSync(kitDir)
      .filter((name) => !name.startsWith('__pycache__'))
      .sort()
      .map((name): PackEntry => ({ name: `${KIT_DIR}/${name}`, type: 'file', mode: 0o644, data: readFileSync(join(kitDir, name)) })),
  ];
  // In the order the names sort, as the rest: the same directory packs to the same bytes.
  const archive = await tarOf([...entries, ...kit].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
  // gzip's header holds no name and a zero time (Node's gzip writes neither), so equal tars compress to equal bytes.
  return gzipSync(archive, { level: 9 });
}

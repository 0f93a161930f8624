// Packs a bundle directory for upload (swarm-node agent upload): a gzip tar made the same way every time (names
// sorted, times, owners and gzip header zeroed, modes 0644/0755), so packing an unchanged directory again gives
// the same bytes and the same digest, and the upload is the idempotent repeat the service recognises. Anything but
// a regular file or a directory (a symlink, a socket) is refused here, before the service would refuse it.
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MAX_BUNDLE_ENTRIES } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import { tarOf, type TarEntry } from '../../lib/tar-pack.js';

/** Directories an author's tools leave that are never part of an agent. */
const SKIPPED = new Set(['.git', 'node_modules', '.DS_Store']);

type PackEntry = TarEntry & { type: 'file' | 'directory' };

export async function packBundleDir(dir: string): Promise<Buffer> {
  const entries: PackEntry[] = [];
  const walk = (relative: string): void => {
    for (const name of readdirSync(join(dir, relative)).sort()) {
      if (SKIPPED.has(name)) continue;
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
  const archive = await tarOf(entries);
  // gzip's header holds no name and a zero time (Node's gzip writes neither), so equal tars compress to equal bytes.
  return gzipSync(archive, { level: 9 });
}

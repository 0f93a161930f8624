// Writing files so that a crash leaves the old file or the new one, never half of one, and a secret is never
// readable by others, not even for an instant; reading one that may not be there.
import {
  chownSync,
  closeSync,
  existsSync,
  fchownSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, basename } from 'node:path';

export function writeFileAtomic(path: string, content: string | Uint8Array, mode: number): void {
  mkdirSync(dirname(path), { recursive: true });
  // globalThis.crypto, not an import of node:crypto: loading that module costs every start (even --help) ~3 ms.
  const suffix = Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(6))).toString('hex');
  const temp = join(dirname(path), `.${basename(path)}.${suffix}.tmp`);
  // The temp file is created with its final mode (O_EXCL), so the content is never written to a wider file.
  const fd = openSync(temp, 'wx', mode);
  try {
    keepOwner(fd, path);
    // writeFileSync on the descriptor writes it whole, however large (a staged release is tens of MB).
    writeFileSync(fd, content);
    fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

const runningAsRoot = (): boolean => process.getuid?.() === 0;

/**
 * When root rewrites a file of an installed node (swarm-node login as root), the new file keeps the old one's owner:
 * otherwise the daemon, running as the service user, could no longer read its own credentials.
 */
function keepOwner(fd: number, path: string): void {
  if (!runningAsRoot()) return;
  const owner = existsSync(path) ? statSync(path) : statSync(dirname(path));
  if (owner.uid !== 0 || owner.gid !== 0) fchownSync(fd, owner.uid, owner.gid);
}

/** Files root creates in a directory that belongs to the service user are given to that user too. */
export function giveToDirectoryOwner(directory: string, paths: readonly string[]): void {
  if (!runningAsRoot()) return;
  const { uid, gid } = statSync(directory);
  if (uid === 0 && gid === 0) return;
  for (const path of paths) if (existsSync(path)) chownSync(path, uid, gid);
}

/** The file's text, or undefined when it is absent. */
export function readTextIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    // ENOTDIR: a file where a parent directory should be; the file is absent, and writing it will say why.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

// Symlinks are relative (`current -> releases/<v>`), so they resolve the same in a scratch --root and on the
// host. A switch is a new link under a temp name renamed over the old one: rename(2) is atomic, so a reader
// sees the old release or the new one, never no `current` at all.
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';

/** The link's own target text, or undefined when there is no link (a regular file there reads as 'not-a-link'). */
export function readLink(path: string): string | undefined | 'not-a-link' {
  try {
    if (!lstatSync(path).isSymbolicLink()) return 'not-a-link';
    return readlinkSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/** The relative text a link at `linkPath` needs to reach `targetPath`. */
export function relativeLinkText(linkPath: string, targetPath: string): string {
  return relative(dirname(linkPath), targetPath);
}

export function switchLink(linkPath: string, linkText: string): void {
  mkdirSync(dirname(linkPath), { recursive: true, mode: 0o755 });
  const temp = join(dirname(linkPath), `.${basename(linkPath)}.${randomBytes(4).toString('hex')}.new`);
  symlinkSync(linkText, temp);
  try {
    renameSync(temp, linkPath);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/** Removes the link only when it is a symlink (never a file or directory someone else put there). */
export function removeLink(path: string): boolean {
  if (readLink(path) === undefined || readLink(path) === 'not-a-link') return false;
  rmSync(path);
  return true;
}

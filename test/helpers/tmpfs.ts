// A directory on a small tmpfs of its own, and a filesystem filled to its last byte: a node whose var/ is full
// (root only: mount). Used by the tests and the fault bench (scripts/bench/faults.ts).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Puts `dir` on a tmpfs of `size` (16m, …) of its own, its contents kept. */
export function putOnTmpfs(dir: string, size: string): string {
  const kept = `${dir}.kept`;
  renameSync(dir, kept);
  mkdirSync(dir, { mode: 0o700 });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]);
  cpSync(kept, dir, { recursive: true });
  rmSync(kept, { recursive: true, force: true });
  return dir;
}

export function releaseTmpfs(dir: string): void {
  execFileSync('umount', ['-l', dir]);
}

/** Writes a file in `dir` until its filesystem refuses (ENOSPC), down to the last bytes: nothing more fits. */
export function fillFilesystem(dir: string): string {
  const filler = join(dir, 'filler');
  writeFileSync(filler, '');
  for (const size of [256 * 1024, 16 * 1024, 1024, 64, 1]) {
    try {
      for (;;) writeFileSync(filler, Buffer.alloc(size, 1), { flag: 'a' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    }
  }
  return filler;
}

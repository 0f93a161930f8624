// A host without some programs, by PATH alone: a directory that holds every program of this PATH (the first of each
// name, as the shell finds it) but those named, for a test of what a script does on a host that lacks them (a
// fresh minimal Debian has no curl and no openssl: scripts/fresh-machine.sh). Programs are symbolic links, but node,
// which is linked hard (copied across file systems): a node's process.execPath is then in the directory, and what
// puts that directory first on a PATH (the demo's cleanEnv) brings back nothing that was left out.
import { chmodSync, copyFileSync, linkSync, readdirSync, realpathSync, statSync, symlinkSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { tempDir } from './temp.js';

/** A PATH of one directory: every program on `path` but `without`; node the real file. */
export function pathWithout(without: readonly string[], path = process.env.PATH ?? '/usr/bin:/bin'): string {
  const dir = tempDir('path-without-');
  const seen = new Set(without);
  for (const from of path.split(delimiter)) {
    let names: string[];
    try {
      names = readdirSync(from);
    } catch {
      continue;
    }
    for (const name of names) {
      if (seen.has(name)) continue;
      const program = join(from, name);
      try {
        if (!statSync(program).isFile()) continue;
      } catch {
        continue;
      }
      seen.add(name);
      if (name !== 'node') symlinkSync(program, join(dir, name));
      else linkOrCopy(program, join(dir, name));
    }
  }
  return dir;
}

/** The file itself (a link to it resolved), linked hard where it can be, else copied with its mode. */
function linkOrCopy(program: string, to: string): void {
  const from = realpathSync(program);
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
    chmodSync(to, statSync(from).mode & 0o7777);
  }
}

// How a printed `sudo swarm-node …` names the program so that it runs this one (docs/api.md "Remedies"). sudo runs
// a command on its own secure_path, not the user's PATH: before install links /usr/local/bin/swarm-node there, `sudo
// swarm-node` finds nothing (exit 1, "command not found"), or an older release's link. The package's own
// bin/swarm-node is then what the person types, as the README's first steps do.
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative } from 'node:path';

/** Debian's and Ubuntu's sudoers `secure_path`, and RHEL's without /usr/local/bin's sbin twin. */
export const SUDO_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/**
 * `swarm-node` when sudo finds one of this package there (the same bin/ once links are resolved), else the path of
 * this package's bin/swarm-node (its wrapper, which runs the package's own Node; bin/swarm-node.js in a checkout):
 * `./…` under `cwd`, absolute elsewhere. `entryScript` is the script Node runs; anything but ours (a test runner)
 * keeps `swarm-node`.
 */
export function programWordForSudo(entryScript: string | undefined, cwd: string, sudoPath: readonly string[] = SUDO_PATH): string {
  if (entryScript === undefined || !/^swarm-node(\.js)?$/.test(basename(entryScript))) return 'swarm-node';
  const ours = realDirectory(entryScript);
  if (ours === undefined) return 'swarm-node';
  for (const dir of sudoPath) {
    const found = join(dir, 'swarm-node');
    if (existsSync(found) && realDirectory(found) === ours) return 'swarm-node';
  }
  const wrapper = join(dirname(entryScript), 'swarm-node');
  const program = existsSync(wrapper) ? wrapper : entryScript;
  const fromCwd = relative(cwd, program);
  return fromCwd.startsWith('..') || isAbsolute(fromCwd) ? program : `./${fromCwd}`;
}

/** The directory a path's file really is in (links resolved), undefined when it does not exist. */
function realDirectory(path: string): string | undefined {
  try {
    return dirname(realpathSync(path));
  } catch {
    return undefined;
  }
}

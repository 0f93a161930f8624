// How a printed command names one of this package's programs (swarm-node, svc-api) so that it runs this one when
// typed (docs/api.md "Remedies"). A bare `swarm-node` is right only where the shell finds this package by that name:
// in a checkout, or in a release unpacked but not yet installed, nothing is on the PATH, and `Next: swarm-node run …`
// answers "command not found". sudo looks on its own secure_path, not the user's PATH: before install links
// /usr/local/bin/swarm-node there, `sudo swarm-node` finds nothing, or an older release's link. The package's own
// bin/<program> is then what the person types, as the README's first steps do.
import { existsSync, realpathSync } from 'node:fs';
import { basename, delimiter, dirname, isAbsolute, join, relative } from 'node:path';

/** Debian's and Ubuntu's sudoers `secure_path`, and RHEL's without /usr/local/bin's sbin twin. */
export const SUDO_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export type ProgramName = 'swarm-node' | 'svc-api';

/** The directories of a PATH value, in order; none when it is unset. */
export function searchPath(path: string | undefined): string[] {
  return (path ?? '').split(delimiter).filter((dir) => dir !== '');
}

/**
 * `program` when a search of `dirs` for it finds this package (the same bin/ once links are resolved), else the
 * path of this package's bin/<program> (its wrapper, which runs the package's own Node; bin/<program>.js in a
 * checkout): `./…` under `cwd`, absolute elsewhere. `entryScript` is the script Node runs, one of this package's
 * bin/ scripts; anything else (a test runner building the program in its process) keeps the bare name.
 */
export function programWord(program: ProgramName, entryScript: string | undefined, cwd: string, dirs: readonly string[]): string {
  if (entryScript === undefined || !/^(swarm-node|svc-api)(\.js)?$/.test(basename(entryScript))) return program;
  const ours = realDirectory(entryScript);
  if (ours === undefined) return program;
  // The first one the search finds is what runs: a later one of ours behind another release's does not count.
  for (const dir of dirs) {
    const found = join(dir, program);
    if (existsSync(found)) {
      if (realDirectory(found) === ours) return program;
      break;
    }
  }
  const bin = dirname(entryScript);
  const wrapper = join(bin, program);
  const script = join(bin, `${program}.js`);
  const path = existsSync(wrapper) ? wrapper : existsSync(script) ? script : undefined;
  if (path === undefined) return program;
  const fromCwd = relative(cwd, path);
  return fromCwd.startsWith('..') || isAbsolute(fromCwd) ? path : `./${fromCwd}`;
}

/** How a `sudo` command names swarm-node: sudo searches its secure_path. */
export function programWordForSudo(entryScript: string | undefined, cwd: string, sudoPath: readonly string[] = SUDO_PATH): string {
  return programWord('swarm-node', entryScript, cwd, sudoPath);
}

/** The directory a path's file really is in (links resolved), undefined when it does not exist. */
function realDirectory(path: string): string | undefined {
  try {
    return dirname(realpathSync(path));
  } catch {
    return undefined;
  }
}

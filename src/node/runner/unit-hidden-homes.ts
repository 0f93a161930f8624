// The host's other node homes out of an agent unit's sight (docs/operations.md "Agent isolation", "What each mode
// holds": other tenants). The unit hides what it can name when install renders it: its own home's etc/ and var/ (but
// var/agents), the named nodes' directory for the installed node, the installed node's etc/ and var/ for a named one.
// What it cannot name changes after that: a named node's siblings, and homes elsewhere whose agents ran here as root
// (the host's uid claims name them). agent-exec hides those before the agent starts, as bubblewrap's runs hide them
// (./run-sandboxed.ts): an empty read-only tmpfs over each, in the unit's own mount namespace (PrivateMounts=), which
// the agent (another uid, no capability) cannot unmount. mount(8) follows links, so a path is covered only where none
// but root could have put a link on the way, and never one the run itself needs (its state, TMPDIR, the runtime).
import { execFile } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * What to cover for a run of the home `own`: every other home whole, but a home that holds `own` (the installed node
 * holds the named ones), of which its etc/ and var/ only; `installPath`'s named nodes are other homes too.
 */
export function otherHomePaths(
  own: string,
  installPath: string,
  claimedHomes: readonly string[],
  /** What the run needs (its state directory, TMPDIR, artifacts, the runtime): never covered, nor what holds them. */
  needed: readonly string[] = [],
): string[] {
  const self = resolve(own);
  const kept = [self, ...needed].map((path) => resolve(path));
  const named = join(resolve(installPath), 'nodes');
  const homes = [installPath, ...(entries(named) ?? []).map((name) => join(named, name)), ...claimedHomes].map((path) => resolve(path));
  const paths = new Set<string>();
  for (const home of homes) {
    // A home at the top of the tree (a claim naming /usr, /var, /tmp) would hide the system with it: not a home to
    // hide but a mistake, and the run goes on as the unit made it.
    if (home === self || dirname(home) === sep || home === sep) continue;
    if (self.startsWith(home + sep)) {
      paths.add(join(home, 'etc'));
      paths.add(join(home, 'var'));
    } else paths.add(home);
  }
  // Nor what the run needs, nor what holds it.
  return [...paths].filter((path) => !kept.some((need) => need === path || need.startsWith(path + sep)));
}

/**
 * Covers each of `paths` that this process can list (one the unit hid already, or that is gone, it cannot: skipped).
 * Throws when a mount fails: the run must not start seeing another home.
 */
export async function hideHomes(paths: readonly string[]): Promise<string[]> {
  const visible = paths.filter((path) => entries(path) !== undefined && onlyRootsWay(path));
  if (visible.length === 0) return [];
  await run('/bin/sh', ['-c', COVER, 'swarm-hide-homes', ...visible]);
  return visible;
}

// $@: the directories. mode 0555: the agent sees an empty directory it cannot write in.
const COVER = `for dir in "$@"; do
  mount -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=0555 swarm-hidden-home "$dir" || exit 1
done`;

/** The directory's entries; undefined where it cannot be listed (gone, or hidden by the unit). */
function entries(path: string): string[] | undefined {
  try {
    return readdirSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Whether every directory from / to `path` is a directory (not a link), root's, and writable by no one else (but a
 * sticky one, whose entries only their owners may replace): then nobody but root can swap a link in before the mount.
 */
export function onlyRootsWay(path: string): boolean {
  let at = resolve(path);
  for (;;) {
    try {
      const stat = lstatSync(at);
      if (!stat.isDirectory() || stat.uid !== 0) return false;
      if ((stat.mode & 0o022) !== 0 && (stat.mode & 0o1000) === 0) return false;
    } catch {
      return false;
    }
    if (at === sep) return true;
    at = dirname(at);
  }
}

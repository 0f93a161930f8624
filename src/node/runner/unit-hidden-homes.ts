// The host's other node homes out of an agent unit's sight (docs/operations.md "Agent isolation", "What each mode
// holds": other tenants). The unit hides what it can name when install renders it: its own home's etc/ and var/ (but
// var/agents), the named nodes' directory for the installed node, the installed node's etc/ and var/ for a named one.
// What it cannot name changes after that: a named node's siblings, and homes elsewhere whose agents ran here as root
// (the host's uid claims name them). agent-exec hides those before the agent starts, as bubblewrap's runs hide them
// (./run-sandboxed.ts): an empty read-only tmpfs over each, in the unit's own mount namespace (PrivateMounts=), which
// the agent (another uid, no capability) cannot unmount.
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * What to cover for a run of the home `own`: every other home whole, but a home that holds `own` (the installed node
 * holds the named ones), of which its etc/ and var/ only; `installPath`'s named nodes are other homes too.
 */
export function otherHomePaths(own: string, installPath: string, claimedHomes: readonly string[]): string[] {
  const self = resolve(own);
  const named = join(resolve(installPath), 'nodes');
  const homes = [installPath, ...(entries(named) ?? []).map((name) => join(named, name)), ...claimedHomes].map((path) => resolve(path));
  const paths = new Set<string>();
  for (const home of homes) {
    if (home === self || home === sep) continue;
    if (self.startsWith(home + sep)) {
      paths.add(join(home, 'etc'));
      paths.add(join(home, 'var'));
    } else paths.add(home);
  }
  return [...paths];
}

/**
 * Covers each of `paths` that this process can list (one the unit hid already, or that is gone, it cannot: skipped).
 * Throws when a mount fails: the run must not start seeing another home.
 */
export async function hideHomes(paths: readonly string[]): Promise<string[]> {
  const visible = paths.filter((path) => entries(path) !== undefined);
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

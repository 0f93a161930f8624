// An agent's state directory under systemd (docs/operations.md "Agent isolation"): <StateDirectory>/<agent_id>, made
// by agent-exec (root, with CAP_CHOWN) before the agent starts, 0700 and owned by the agent's own uid, so the run of
// any other agent, which has a uid of its own, can neither list, read nor write it. Their parent is root's, 0711.
//
// A node installed before agents had uids of their own kept their state as the node's dynamic user. systemd hands
// that tree to root at the first start of a unit without one (it moves /var/lib/private/<dir> back and chowns it
// all), and each agent's first run takes its own directory over: every entry is given to the agent's uid without
// following a link, but a file with several links, which may be another agent's planted there while they shared a
// user, stays root's. What sits where the directory goes and is none (a link, planted the same way) is removed.
import { chmodSync, lchownSync, lstatSync, mkdirSync, readdirSync, rmSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import type { RunIdentity } from './isolation.js';

/** `<parent>/<agentId>`, the agent's own: made, or taken over from root, for `identity`. */
export function prepareAgentStateDir(parent: string, agentId: string, identity: RunIdentity): string {
  const dir = join(parent, agentId);
  let found = statOf(dir);
  if (found !== undefined && !found.isDirectory()) {
    rmSync(dir, { force: true });
    found = undefined;
  }
  if (found === undefined) {
    mkdirSync(dir, { mode: 0o700 });
    lchownSync(dir, identity.uid, identity.gid);
    return dir;
  }
  if (found.uid === identity.uid) return dir;
  if (found.uid !== 0) {
    // The run's failure message is all its user and the operator see of it: the remedy goes in it.
    throw new Error(
      `the state directory ${dir} belongs to uid ${found.uid}, not to this agent's uid ${identity.uid}: as root, chown -R ${identity.uid}:${identity.gid} ${dir}`,
    );
  }
  chmodSync(dir, 0o700);
  takeOver(dir, found, identity);
  return dir;
}

/** Depth first: a directory is given away after what is in it, while root may still read it. */
function takeOver(path: string, stats: Stats, identity: RunIdentity): void {
  if (stats.uid !== 0) return;
  if (stats.isDirectory()) {
    // Root owns it, so it may make it readable to itself (it holds no CAP_DAC_READ_SEARCH).
    if ((stats.mode & 0o500) !== 0o500) chmodSync(path, (stats.mode & 0o7777) | 0o700);
    for (const name of readdirSync(path)) takeOver(join(path, name), lstatSync(join(path, name)), identity);
  } else if (stats.isFile() && stats.nlink > 1) {
    return;
  }
  lchownSync(path, identity.uid, identity.gid);
}

function statOf(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

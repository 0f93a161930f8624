// The processes of a node home that uninstall --purge stops before its files go (docs/operations.md "Uninstall"):
// systemctl stops the unit's daemon, but a daemon started by hand (`swarm-node daemon` with the home) would go on
// polling with the credential it read at start, taking runs for a node that no longer exists here. Every process that
// holds a file of the home's var/ open (the daemon's database, above all) is one of them, however it was started.
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { processIsAlive } from '../host/process-alive.js';

/** Pids, but this process', with a descriptor open on a file under `dir`. */
export function processesUsing(dir: string): number[] {
  // The kernel names an open file by its real path: a home reached through a link (a --root given that way) is resolved.
  const prefix = `${realOrResolved(dir)}${sep}`;
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${name}/fd`);
    } catch {
      continue; // Gone, or not ours to read (another user's, without root): not one we could stop either.
    }
    if (fds.some((fd) => opensUnder(`/proc/${name}/fd/${fd}`, prefix))) found.push(Number(name));
  }
  return found;
}

function realOrResolved(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

function opensUnder(link: string, prefix: string): boolean {
  try {
    const target = readlinkSync(link).replace(/ \(deleted\)$/, '');
    return target.startsWith(prefix);
  } catch {
    return false;
  }
}

/**
 * SIGTERM to each, as systemd stops the unit (the daemon lets runs in flight finish, then tells the service it
 * stopped), then SIGKILL to what is left after `graceMs` (the unit's TimeoutStopSec=). Resolves with what was killed.
 */
export async function stopProcesses(pids: readonly number[], graceMs = 30_000): Promise<{ stopped: number[]; killed: number[] }> {
  const signal = (pid: number, name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // Gone meanwhile.
    }
  };
  for (const pid of pids) signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (pids.some(processIsAlive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  const killed = pids.filter(processIsAlive);
  for (const pid of killed) signal(pid, 'SIGKILL');
  const bound = Date.now() + 5_000;
  while (killed.some(processIsAlive) && Date.now() < bound) await new Promise((resolve) => setTimeout(resolve, 50));
  return { stopped: pids.filter((pid) => !killed.includes(pid)), killed };
}

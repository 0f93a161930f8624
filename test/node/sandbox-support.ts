// What the sandbox tests need of the host, and how they find a run's processes from outside it.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Root, with bubblewrap able to make a sandbox here (.ci/run installs it). */
export const sandboxAvailable =
  process.getuid?.() === 0 && spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true'], { stdio: 'ignore' }).status === 0;

/** The pids of processes whose environment holds `marker` (SWARM_RUN_ID=… is in every agent's). */
export function processesOf(marker: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(marker)) found.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

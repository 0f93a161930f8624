// What the sandbox tests need of the host, and how they find a run's processes from outside it.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

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

const opened: string[] = [];

/**
 * A directory every user may pass, where a host keeps things (/var/tmp; not /tmp, which is each run's own in a
 * sandbox): mkdtemp makes 0700, and the agent runs as another user. removeOpenDirs() takes them away.
 */
export function openDir(prefix: string): string {
  mkdirSync('/var/tmp', { recursive: true });
  const dir = mkdtempSync(join('/var/tmp', prefix));
  chmodSync(dir, 0o755);
  opened.push(dir);
  return dir;
}

export function removeOpenDirs(): void {
  for (const dir of opened.splice(0)) rmSync(dir, { recursive: true, force: true });
}

// Whether a process still exists, for rows and state that name the process waiting on them (a run's owner_pid, the
// daemon's pid): signal 0 checks without sending anything. A zombie (exited, not yet reaped by its parent) is not
// alive: it runs nothing and answers nothing, and waiting for it to go would wait for its parent.
import { readFileSync } from 'node:fs';

export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to another user (the daemon's service user).
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/** /proc/<pid>/stat's state, the field after the command name in parentheses (which may hold spaces). */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false;
  }
}

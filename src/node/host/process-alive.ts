// Whether a process still exists, for rows and state that name the process waiting on them (a run's owner_pid, the
// daemon's pid): signal 0 checks without sending anything.
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user (the daemon's service user).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

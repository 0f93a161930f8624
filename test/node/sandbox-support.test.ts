// The tests find a run's processes by listing /proc and reading each one's files; under load a process listed can
// end before its files are read (the race that failed "the run's cgroup holds the unit's figures" one run in a few).
// The helper must take that as "not one of them", every time: here the process has surely ended before the read.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect, it } from 'vitest';
import { processesAmong } from './sandbox-support.js';

it('a process that ended between the listing and the read is not found, and nothing throws', async () => {
  const marker = `SANDBOX_SUPPORT_MARKER=${process.pid}-${Date.now()}`;
  const [name, value] = marker.split('=') as [string, string];
  const alive = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env: { [name]: value }, stdio: 'ignore' });
  const ended = spawn(process.execPath, ['-e', '0'], { env: { [name]: value }, stdio: 'ignore' });
  try {
    await once(alive, 'spawn');
    // "Listed" while both ran: the second has exited and been reaped before its files are read.
    const listed = [ended.pid!, alive.pid!];
    await once(ended, 'exit');
    expect(processesAmong(listed, marker, process.execPath)).toEqual([alive.pid]);
    expect(processesAmong(listed, marker)).toEqual([alive.pid]);
  } finally {
    alive.kill('SIGKILL');
  }
});

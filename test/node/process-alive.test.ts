// Whether a process is alive, as the daemon's record and upgrade's wait for a stopped daemon read it: a zombie (exited,
// its parent not reaping it, as under a PID 1 that reaps nothing) is not, or upgrade would wait out its bound for a
// daemon that is gone.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { processIsAlive } from '../../src/node/host/process-alive.js';
import { waitFor } from '../helpers/wait.js';

const parents: number[] = [];
afterEach(() => {
  for (const pid of parents.splice(0)) if (processIsAlive(pid)) process.kill(pid, 'SIGKILL');
});

describe('processIsAlive', () => {
  it('is true of a running process, false of one that is gone and of a zombie', async () => {
    expect(processIsAlive(process.pid)).toBe(true);
    // A parent that forks a child which exits at once, and never waits for it: a zombie while the parent sleeps.
    const parent = spawn('perl', ['-e', '$| = 1; my $child = fork(); exit 0 if $child == 0; print "$child\n"; sleep 600'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    parents.push(parent.pid!);
    let out = '';
    parent.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const child = await waitFor(async () => (/^\d+\n/.test(out) ? Number(out.trim()) : undefined), "the child's pid", 30_000);
    const state = () => {
      const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    };
    await waitFor(async () => (state() === 'Z' ? true : undefined), 'the child to be a zombie', 30_000);
    expect(processIsAlive(child)).toBe(false);
    expect(processIsAlive(parent.pid!)).toBe(true);
    process.kill(parent.pid!, 'SIGKILL');
    await waitFor(async () => (processIsAlive(parent.pid!) ? undefined : true), 'the parent to be gone', 30_000);
  });
});

// What a run's agent writes, as the runner hands it on (docs/api.md "Run logs"), unsandboxed (agent_isolation none,
// its directory on the host: the node reads its result file itself; the sandboxes' way, through the launcher, is in
// agent-isolation.test.ts): stdout and stderr as they come, the result from SWARM_RESULT_FILE when the agent wrote
// one, a result file that is not a regular file never holding the node, and a run its user cancelled ending so.
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RUN_CANCELLED } from '../../src/node/runner/agent-process.js';
import { createLocalRunner } from '../../src/node/runner/run-local.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

afterAll(() => removeTempDirs());

const AGENT = 'agent_ops_monitor_004';
const aRun = (input: unknown = {}) => ({
  run_id: randomUUID(),
  agent_id: AGENT,
  user_id: 'output@example.com',
  tier: 'svc_starter_agents',
  input,
});

function runnerWith(program: string) {
  const home = tempDir('swarm-output-');
  mkdirSync(join(home, 'var'));
  installTestBundle(home, AGENT, program);
  return createLocalRunner({
    home,
    varDir: join(home, 'var'),
    packageDir: REPO_ROOT,
    isolation: 'none',
    limits: { timeoutMs: 60_000, outputBytes: 64 * 1024 },
  });
}

/** The agent's output as the runner hands it on, by stream. */
function collector() {
  const seen = { stdout: '', stderr: '' };
  return { seen, onOutput: (stream: 'stdout' | 'stderr', chunk: Buffer) => (seen[stream] += chunk.toString('utf8')) };
}

describe('an agent run hands on what it writes', () => {
  it('stdout and stderr as they come, while the agent still runs', async () => {
    const scratch = tempDir('swarm-output-scratch-');
    const release = join(scratch, 'release');
    const runner = runnerWith(
      agentProgram(`const fs = await import('node:fs');
        console.log('first on stdout');
        console.error('first on stderr');
        const poll = setInterval(() => {
          if (!fs.existsSync(${JSON.stringify(release)})) return;
          clearInterval(poll);
          process.stdout.write(JSON.stringify({ summary: 'stdout answers when no result file' }));
        }, 20);`),
    );
    const { seen, onOutput } = collector();
    const running = runner.run(aRun(), undefined, onOutput);
    await waitFor(
      async () => (seen.stdout.includes('first on stdout') && seen.stderr.includes('first on stderr') ? true : undefined),
      'both lines before the run ends',
    );
    writeFileSync(release, '');
    // Free text before it on stdout: no result file, so stdout is the answer and must be one JSON document.
    expect(await running).toMatchObject({
      status: 'failed',
      output: { error: 'bad_output', message: expect.stringContaining('SWARM_RESULT_FILE') },
    });
    expect(seen.stdout).toBe('first on stdout\n{"summary":"stdout answers when no result file"}');
  });

  it('the result file is the answer, and stdout only log, however much stdout holds', async () => {
    const runner = runnerWith(
      agentProgram(`const fs = await import('node:fs');
        for (let i = 0; i < 100; i++) console.log('progress ' + i + ' ' + 'x'.repeat(1000));
        fs.writeFileSync(process.env.SWARM_RESULT_FILE, JSON.stringify({ summary: 'from the file', dir: process.env.SWARM_RESULT_FILE.startsWith(process.cwd()) }));`),
    );
    const { seen, onOutput } = collector();
    // 100 KB on stdout, over this runner's 64 KiB answer: stdout is not the answer, so that is no failure.
    expect(await runner.run(aRun(), undefined, onOutput)).toEqual({ status: 'succeeded', output: { summary: 'from the file', dir: true } });
    expect(seen.stdout.split('\n').filter((line) => line.startsWith('progress '))).toHaveLength(100);
  });

  it('a result file over the cap, or one that is not JSON, fails bad_output; a FIFO there is no result file', async () => {
    const big = runnerWith(
      agentProgram(
        `(await import('node:fs')).writeFileSync(process.env.SWARM_RESULT_FILE, JSON.stringify({ text: 'x'.repeat(70 * 1024) }));`,
      ),
    );
    expect(await big.run(aRun())).toMatchObject({
      status: 'failed',
      output: { error: 'bad_output', message: expect.stringContaining('larger than 65536 bytes') },
    });
    const notJson = runnerWith(agentProgram(`(await import('node:fs')).writeFileSync(process.env.SWARM_RESULT_FILE, 'done!');`));
    expect(await notJson.run(aRun())).toMatchObject({
      status: 'failed',
      output: { error: 'bad_output', message: expect.stringContaining('not one JSON document') },
    });
    // A FIFO with no writer would block whoever opens it to read: the node does not, and takes stdout's answer.
    const fifo = runnerWith(
      agentProgram(`(await import('node:child_process')).execFileSync('mkfifo', [process.env.SWARM_RESULT_FILE]);
        process.stdout.write('{"summary": "stdout"}');`),
    );
    expect(await fifo.run(aRun())).toEqual({ status: 'succeeded', output: { summary: 'stdout' } });
  });

  it('a run its user cancelled is stopped and fails cancelled; the node stopping is aborted', async () => {
    const held = agentProgram(`console.log('holding'); setInterval(() => {}, 1000);`);
    for (const [reason, error] of [
      [RUN_CANCELLED, 'cancelled'],
      [undefined, 'aborted'],
    ] as const) {
      const runner = runnerWith(held);
      const { seen, onOutput } = collector();
      const stop = new AbortController();
      const running = runner.run(aRun(), stop.signal, onOutput);
      await waitFor(async () => (seen.stdout.includes('holding') ? true : undefined), 'the agent to start');
      stop.abort(reason);
      expect(await running).toMatchObject({ status: 'failed', output: { error } });
    }
  });
});

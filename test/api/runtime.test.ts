import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentRuntime } from '../../src/api/context.js';
import { AgentRunError, createAgentRuntime, withDeadline, type DeadlineTimer } from '../../src/api/runtime/agent-runtime.js';
import { MAX_AGENT_OUTPUT_BYTES } from '../../src/api/runtime/command-runtime.js';
import type { RunningService } from '../../src/api/server.js';
import { waitFor } from '../helpers/funnel.js';
import { execa } from 'execa';
import { SVC_API_BIN, spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { entriesOf, execute, paidUser, runsOf } from './execute-fixtures.js';

const INPUT = { run_id: '5b0c2a52-8d4e-4f0e-9d43-3f8a3c1b2d10', agent_id: 'agent_dev_review_012', user_id: 'ada@example.com' };

let scripts: string;
/** A real agent program: a node script in a temp dir, run as `node <script>`. */
function agentScript(name: string, source: string): string[] {
  const path = join(scripts, name);
  writeFileSync(path, source);
  return [process.execPath, path];
}
const READ_STDIN = `let input = ''; process.stdin.setEncoding('utf8'); for await (const chunk of process.stdin) input += chunk;\n`;

/**
 * A deadline the test fires itself, once the agent has started: a real 400 ms timer can fire before a loaded
 * machine has even started Node, and an agent killed before its first line never writes its pid file.
 */
function manualDeadline(): { timer: DeadlineTimer; armedMs: number | undefined; fire(): void } {
  let expire: (() => void) | undefined;
  const deadline = {
    armedMs: undefined as number | undefined,
    timer: ((onExpire, ms) => {
      expire = onExpire;
      deadline.armedMs = ms;
      return () => {
        expire = undefined;
      };
    }) as DeadlineTimer,
    fire() {
      if (expire === undefined) throw new Error('the deadline is not armed');
      expire();
    },
  };
  return deadline;
}

/** The pid an agent wrote once it was running: waited for, however long Node takes to start. */
function pidOf(pidFile: string): Promise<number> {
  return waitFor(async () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) || undefined : undefined), `${pidFile} to be written`, 30_000);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function runFailure(runtime: AgentRuntime, signal = new AbortController().signal): Promise<AgentRunError> {
  const error = await runtime.run(INPUT, signal).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgentRunError);
  return error as AgentRunError;
}

beforeAll(() => {
  scripts = tempDir('agents-');
});
afterAll(() => removeTempDirs());

describe('sandbox runtime', () => {
  it('answers at once with a result labelled as a sandbox run', async () => {
    const runtime = createAgentRuntime({ timeoutMs: 1000 });
    expect(await runtime.run(INPUT, new AbortController().signal)).toEqual({
      sandbox: true,
      agent_id: 'agent_dev_review_012',
      run_id: INPUT.run_id,
      summary: 'sandbox run of Dev review the service: no real agent was invoked',
    });
  });
});

describe('command runtime', () => {
  it('writes the run as JSON to stdin and returns the JSON document from stdout', async () => {
    const command = agentScript('echo.mjs', `${READ_STDIN}const run = JSON.parse(input);\nprocess.stdout.write(JSON.stringify({ received: run, argv: process.argv.slice(2) }) + '\\n');\n`);
    const runtime = createAgentRuntime({ command: [...command, '--flag', 'two words; $(rm -rf /)'], timeoutMs: 5000, env: {} });
    expect(await runtime.run(INPUT, new AbortController().signal)).toEqual({
      received: INPUT,
      // Arguments reach the program as they are: no shell ever sees them.
      argv: ['--flag', 'two words; $(rm -rf /)'],
    });
  });

  it("keeps the service's SVC_* settings and secrets out of the agent's environment", async () => {
    const command = agentScript('env.mjs', `process.stdout.write(JSON.stringify(Object.keys(process.env).filter((k) => k.startsWith('SVC_') || k === 'AGENT_SETTING')));\n`);
    const runtime = createAgentRuntime({
      command,
      timeoutMs: 5000,
      env: { ...process.env, SVC_JWT_SECRET: 'secret', SVC_WEBHOOK_SECRET: 'whsec', AGENT_SETTING: 'kept' },
    });
    expect(await runtime.run(INPUT, new AbortController().signal)).toEqual(['AGENT_SETTING']);
  });

  it('fails the run on a non-zero exit, keeping stderr for the log only', async () => {
    const command = agentScript('fail.mjs', `process.stderr.write('model quota exhausted');\nprocess.exit(3);\n`);
    const error = await runFailure(createAgentRuntime({ command, timeoutMs: 5000 }));
    expect(error.reason).toBe('exit');
    expect(error.message).toBe('the agent exited with code 3');
    expect(error.detail).toBe('model quota exhausted');
  });

  it('fails the run when stdout is not JSON', async () => {
    const command = agentScript('prose.mjs', `process.stdout.write('all done, no JSON here');\n`);
    expect((await runFailure(createAgentRuntime({ command, timeoutMs: 5000 }))).reason).toBe('bad_output');
    const empty = agentScript('silent.mjs', ``);
    expect((await runFailure(createAgentRuntime({ command: empty, timeoutMs: 5000 }))).reason).toBe('bad_output');
  });

  it('fails the run when the agent writes more than the output limit', async () => {
    const command = agentScript('flood.mjs', `process.stdout.write('"' + 'x'.repeat(${MAX_AGENT_OUTPUT_BYTES}) + '"');\n`);
    const error = await runFailure(createAgentRuntime({ command, timeoutMs: 5000 }));
    expect(error.reason).toBe('bad_output');
    expect(error.message).toContain('more than');
  });

  it('fails the run when the program does not exist', async () => {
    const error = await runFailure(createAgentRuntime({ command: [join(scripts, 'no-such-agent')], timeoutMs: 5000 }));
    expect(error.reason).toBe('spawn');
  });

  it('kills an agent that hangs past the timeout', async () => {
    const pidFile = join(scripts, 'hang.pid');
    const command = agentScript('hang.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetTimeout(() => {}, 60000);\n`);
    const deadline = manualDeadline();
    const pending = runFailure(createAgentRuntime({ command, timeoutMs: 400, deadlineTimer: deadline.timer }));
    const pid = await pidOf(pidFile);
    expect(deadline.armedMs).toBe(400);
    deadline.fire();
    const error = await pending;
    expect(error.reason).toBe('timeout');
    expect(error.message).toBe('the agent did not answer within 400 ms');
    await waitFor(async () => (isAlive(pid) ? undefined : true), 'the hung agent to be killed');
  });

  it('kills an agent that ignores SIGTERM, and settles the run at the deadline all the same', async () => {
    const pidFile = join(scripts, 'stubborn.pid');
    const command = agentScript(
      'stubborn.mjs',
      `import { writeFileSync } from 'node:fs';\nprocess.on('SIGTERM', () => {});\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetInterval(() => {}, 1000);\n`,
    );
    const deadline = manualDeadline();
    const pending = runFailure(createAgentRuntime({ command, timeoutMs: 400, deadlineTimer: deadline.timer }));
    const pid = await pidOf(pidFile);
    deadline.fire();
    expect((await pending).reason).toBe('timeout');
    // Settled at the deadline, while the agent (deaf to SIGTERM) is still there: only SIGKILL, 2 s on, ends it.
    expect(isAlive(pid)).toBe(true);
    await waitFor(async () => (isAlive(pid) ? undefined : true), 'SIGKILL after the grace period');
  });

  it('stops the agent when the service shuts down', async () => {
    const pidFile = join(scripts, 'slow.pid');
    const command = agentScript('slow.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(pidFile)}, String(process.pid));\nsetTimeout(() => process.stdout.write('{}'), 30000);\n`);
    const shutdown = new AbortController();
    const pending = runFailure(createAgentRuntime({ command, timeoutMs: 60_000 }), shutdown.signal);
    const pid = await pidOf(pidFile);
    shutdown.abort();
    expect((await pending).reason).toBe('aborted');
    await waitFor(async () => (isAlive(pid) ? undefined : true), 'the agent to be stopped');
  });
});

describe('deadline', () => {
  it('settles when the deadline passes even when a runtime ignores its signal', async () => {
    const deaf: AgentRuntime = { run: () => new Promise(() => {}) };
    const deadline = manualDeadline();
    const pending = runFailure(withDeadline(deaf, 200, deadline.timer));
    deadline.fire();
    const error = await pending;
    expect(error.reason).toBe('timeout');
    expect(error.message).toBe('the agent did not answer within 200 ms');
  });

  it('measures the timeout with a real timer unless told otherwise', async () => {
    const deaf: AgentRuntime = { run: () => new Promise(() => {}) };
    expect((await runFailure(withDeadline(deaf, 200))).reason).toBe('timeout');
  });

  it('passes through a result and a runtime error of its own', async () => {
    expect(await withDeadline({ run: async () => 'ok' }, 200).run(INPUT, new AbortController().signal)).toBe('ok');
    const broken: AgentRuntime = { run: async () => { throw new RangeError('bug'); } };
    await expect(withDeadline(broken, 200).run(INPUT, new AbortController().signal)).rejects.toBeInstanceOf(RangeError);
  });
});

describe('execute with a command runtime', () => {
  let ok: RunningService;
  let failing: RunningService;
  let hanging: RunningService;
  beforeAll(async () => {
    ok = await startSvcApi({
      agentCommand: agentScript('agent-ok.mjs', `${READ_STDIN}const run = JSON.parse(input);\nprocess.stdout.write(JSON.stringify({ report: 'reviewed', for: run.user_id, agent: run.agent_id }));\n`),
    });
    failing = await startSvcApi({ agentCommand: agentScript('agent-fail.mjs', `process.stderr.write('boom');\nprocess.exit(1);\n`) });
    hanging = await startSvcApi({ agentCommand: agentScript('agent-hang.mjs', `setTimeout(() => {}, 60000);\n`), agentTimeoutMs: 300 });
  });
  afterAll(async () => {
    await Promise.all([ok.close(), failing.close(), hanging.close()]);
  });

  it("stores and returns the agent's JSON as the run output", async () => {
    const user = await paidUser(ok, 20);
    const response = await execute(ok, user.token, { user_id: user.email, agent_id: 'agent_dev_review_012' });
    expect(response.body).toMatchObject({
      status: 'succeeded',
      charged_cents: 12,
      balance_cents: 8,
      output: { report: 'reviewed', for: user.email, agent: 'agent_dev_review_012' },
    });
    const stored = ok.db.prepare('SELECT output_json FROM runs WHERE run_id = ?').get(response.body.run_id) as { output_json: string };
    expect(JSON.parse(stored.output_json)).toEqual(response.body.output);
  });

  it('refunds a run whose agent fails: status failed, charged 0, the balance whole again', async () => {
    const user = await paidUser(failing, 20);
    const key = `retry-${user.email}`;
    const response = await execute(failing, user.token, { user_id: user.email, agent_id: 'agent_dev_review_012' }, key);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: 'failed',
      charged_cents: 0,
      balance_cents: 20,
      output: { error: 'exit', message: 'the agent exited with code 1' },
    });
    expect(response.text).not.toContain('boom');
    expect(failing.ctx.ledger.balance(user.email)).toBe(20);
    expect(runsOf(failing, user.email)).toMatchObject([{ status: 'failed', charged_cents: 0 }]);
    expect(entriesOf(failing, user.email).map((entry) => [entry.kind, entry.amount_cents])).toEqual([
      ['credit', 20],
      ['debit', 12],
      ['refund', 12],
    ]);
    // The failed result is the key's answer: a retry with it replays the failure and runs nothing.
    const replay = await execute(failing, user.token, { user_id: user.email, agent_id: 'agent_dev_review_012' }, key);
    expect(replay.text).toBe(response.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(runsOf(failing, user.email)).toHaveLength(1);
  });

  it('refunds a run whose agent times out', async () => {
    const user = await paidUser(hanging, 20);
    const response = await execute(hanging, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' });
    expect(response.body).toMatchObject({ status: 'failed', charged_cents: 0, balance_cents: 20, output: { error: 'timeout' } });
    expect(hanging.ctx.ledger.balance(user.email)).toBe(20);
  });
});

describe('svc-api --agent-command and --agent-timeout', () => {
  it('runs the command per run and refunds a run past --agent-timeout seconds', async () => {
    const dataDir = tempDir('svc-api-timeout-');
    const setup = await startSvcApi({ dataDir });
    const user = await paidUser(setup, 20);
    await setup.close();
    const command = agentScript('bin-hang.mjs', `setTimeout(() => process.stdout.write('{}'), 30000);\n`);
    const api = await spawnSvcApi({ dataDir, args: [...command.flatMap((part) => ['--agent-command', part]), '--agent-timeout', '1'] });
    try {
      const started = Date.now();
      const response = await fetch(`${api.baseUrl}/v1/swarm/execute`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': 'timeout-1' },
        body: JSON.stringify({ user_id: user.email, agent_id: 'agent_svc_skills_005' }),
      });
      const body = (await response.json()) as Record<string, unknown>;
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(body).toMatchObject({ status: 'failed', charged_cents: 0, balance_cents: 20, output: { error: 'timeout', message: 'the agent did not answer within 1 s' } });
    } finally {
      await api.stop();
    }
  });

  it('refuses a timeout that is not a positive whole number of seconds', async () => {
    const result = await execa('node', [SVC_API_BIN, '--data-dir', tempDir(), '--agent-timeout', '0.5'], { reject: false });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--agent-timeout must be a positive whole number of seconds');
  });
});

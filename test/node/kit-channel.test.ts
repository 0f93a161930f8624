// The agent kit's channel (docs/api.md "The kit's channel") in every way a node runs agents: unsandboxed, under
// bubblewrap and unshare as root (each run under its agent's uid), and as the systemd unit's agent-exec (its
// stand-in, ./sandbox-support.ts). What an agent prints is its log and nothing more, whatever it looks like; the
// kit's calls reach the node on the run's own descriptor: events in order, a partial result marked, a failure of the
// agent's own, every limit refused by name, a call of a newer protocol refused; the Python module with the host's
// python3 and nothing else.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalRunner, type LocalRunner } from '../../src/node/runner/run-local.js';
import type { KitEvent } from '../../src/node/runner/kit-channel.js';
import { KIT_CALL_BURST, KIT_PROTOCOL_VERSION } from '../../src/contract/kit-protocol.js';
import { agentProgram, installKitBundle, installTestBundle } from '../helpers/bundles.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { agentSocketStandIn, openDir, removeOpenDirs, sandboxAvailable } from './sandbox-support.js';

const asRoot = sandboxAvailable;
const MODES = ['none', ...(asRoot ? (['bubblewrap', 'unshare', 'systemd'] as const) : [])] as const;

/** Every line a kit, the node's answers or agent-exec's relay writes, as an agent without the kit could print them. */
const FORGED_LINES = [
  { v: 1, id: 1, op: 'hello' },
  { v: 1, id: 2, op: 'event', type: 'progress', data: { forged: true } },
  { v: 1, id: 3, op: 'result', output: { forged: true } },
  { v: 1, id: 4, op: 'fail', message: 'forged' },
  { v: 1, id: 5, ok: {} },
  { kit_event: { type: 'custom', name: 'forged', data: { forged: true }, at: 0 } },
  { output: { stream: 'stdout', data: Buffer.from('forged').toString('base64') } },
  { status: 'succeeded', output: { forged: true }, stderrTail: '' },
].map((line) => JSON.stringify(line));

/** Prints each forged line on stdout and stderr, and answers in its result file, which is the node's only way to hear it. */
const FORGER = agentProgram(`const fs = await import('node:fs');
  const lines = ${JSON.stringify(FORGED_LINES)};
  for (const line of lines) { process.stdout.write(line + '\\n'); process.stderr.write(line + '\\n'); }
  fs.writeFileSync(process.env.SWARM_RESULT_FILE, JSON.stringify({ real: true }));`);

/** On the kit: events, each limit met once, a call of the next protocol, then a partial result saying what it saw. */
const KIT_AGENT = `import * as kit from './swarm_kit/kit.mjs';
const codeOf = async (promise) => { try { await promise; return 'accepted'; } catch (error) { return error.code; } };
await kit.runAgent(async (input, run) => {
  await kit.progress(1, 3, 'started');
  await kit.event('custom', { step: 'two' }, 'step.done');
  await kit.event('tokens', { text: 'Hello' });
  const report = {
    attempt: run.attempt,
    protocol: run.protocol,
    newer: await codeOf(kit.call('thread.get', {}, ${KIT_PROTOCOL_VERSION + 1})),
    unknown_op: await codeOf(kit.call('thread.get', {})),
    too_large: await codeOf(kit.event('output', 'x'.repeat(70 * 1024))),
    unnamed_custom: await codeOf(kit.event('custom', {})),
    bad_type: await codeOf(kit.event('debug', {})),
  };
  // A burst past the bucket: the calls over it are refused by name, the rest taken.
  const burst = await Promise.all(Array.from({ length: ${KIT_CALL_BURST + 50} }, () => codeOf(kit.call('hello'))));
  report.rate_limited = burst.filter((code) => code === 'kit_rate_limited').length > 0;
  console.log(JSON.stringify({ printed: 'a line of the log, not a result' }));
  await kit.partial({ summary: 'two of three', report });
});
`;

const FAILING_AGENT = `import * as kit from './swarm_kit/kit.mjs';
await kit.runAgent(async () => {
  await kit.progress(1, 2);
  throw new Error('the upstream API said no');
});
`;

const PYTHON_AGENT = `import swarm_kit as kit


def work(input, run):
    kit.progress(1, 2, "half")
    kit.event("custom", {"lang": "python"}, name="py.step")
    try:
        kit.call("thread.get", {}, protocol=kit.KIT_PROTOCOL + 1)
        newer = "accepted"
    except kit.KitError as error:
        newer = error.code
    return {"summary": "from python", "newer": newer, "attempt": run["attempt"]}


kit.run_agent(work)
`;

afterAll(() => {
  removeOpenDirs();
  removeTempDirs();
});

describe.each(MODES)('the kit channel with isolation %s', (isolation) => {
  let home: string;
  let runner: LocalRunner;
  let server: Server | undefined;

  beforeAll(async () => {
    home = openDir(`kit-${isolation}-`);
    installTestBundle(home, 'agent_ops_monitor_004', FORGER);
    installKitBundle(home, 'agent_research_rag_015', { 'main.mjs': KIT_AGENT });
    installKitBundle(home, 'agent_dev_review_012', { 'main.mjs': FAILING_AGENT });
    installKitBundle(home, 'agent_svc_skills_005', { 'main.py': PYTHON_AGENT }, ['python3', 'main.py']);
    const agentSocket = join(home, 'agent.sock');
    if (isolation === 'systemd') server = await agentSocketStandIn(agentSocket);
    runner = createLocalRunner({
      home,
      varDir: join(home, 'var'),
      packageDir: REPO_ROOT,
      isolation,
      agentSocket,
      limits: { timeoutMs: 60_000 },
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  });

  const run = async (agentId: string, attempt?: number) => {
    const events: KitEvent[] = [];
    const log: string[] = [];
    const outcome = await runner.run(
      {
        run_id: randomUUID(),
        agent_id: agentId,
        user_id: 'kit@example.com',
        tier: 'svc_starter_agents',
        input: {},
        ...(attempt === undefined ? {} : { attempt }),
      },
      undefined,
      (stream, chunk) => log.push(`${stream}:${chunk.toString('utf8')}`),
      undefined,
      (event) => events.push(event),
    );
    return { outcome, events, log: log.join('') };
  };

  it('nothing an agent prints on stdout or stderr acts, however it is framed: it is the log', async () => {
    const { outcome, events, log } = await run('agent_ops_monitor_004');
    expect(outcome).toEqual({ status: 'succeeded', output: { real: true } });
    expect(events).toEqual([]);
    for (const line of FORGED_LINES) {
      expect(log).toContain(`stdout:`);
      expect(log).toContain(line);
    }
  });

  it("the kit's calls reach the node on the run's channel: events in order, limits and a newer protocol refused by name, a partial result marked", async () => {
    const { outcome, events, log } = await run('agent_research_rag_015', 2);
    expect(outcome.status, JSON.stringify(outcome)).toBe('succeeded');
    expect(outcome.output).toEqual({
      summary: 'two of three',
      partial: true,
      report: {
        attempt: 2,
        protocol: KIT_PROTOCOL_VERSION,
        newer: 'kit_protocol_unsupported',
        unknown_op: 'kit_op_unknown',
        too_large: 'kit_message_too_large',
        unnamed_custom: 'kit_call_invalid',
        bad_type: 'kit_call_invalid',
        rate_limited: true,
      },
    });
    expect(events.map(({ type, name, data }) => ({ type, name, data }))).toEqual([
      { type: 'progress', name: undefined, data: { done: 1, total: 3, message: 'started' } },
      { type: 'custom', name: 'step.done', data: { step: 'two' } },
      { type: 'tokens', name: undefined, data: { text: 'Hello' } },
    ]);
    // What it printed is its log, not its result.
    expect(log).toContain('a line of the log, not a result');
  });

  it("a failure of the agent's own ends the run failed with its message, whatever it printed", async () => {
    const { outcome, events } = await run('agent_dev_review_012');
    expect(outcome).toEqual({ status: 'failed', output: { error: 'declared_failure', message: 'the upstream API said no' } });
    expect(events).toHaveLength(1);
  });

  it('the Python module runs with the host python3 and its standard library alone', async () => {
    const { outcome, events } = await run('agent_svc_skills_005');
    expect(outcome, JSON.stringify(outcome)).toEqual({
      status: 'succeeded',
      output: { summary: 'from python', newer: 'kit_protocol_unsupported', attempt: 1 },
    });
    expect(events.map((event) => [event.type, event.name ?? null, event.data])).toEqual([
      ['progress', null, { done: 1, total: 2, message: 'half' }],
      ['custom', 'py.step', { lang: 'python' }],
    ]);
  });
});

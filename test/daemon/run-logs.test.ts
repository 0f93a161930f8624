// docs/api.md "Run logs", end to end: a real daemon runs the agent and ships its stdout and stderr while it works;
// the built CLI (`swarm-node logs`) reads them back, and follows a long run live until it ends, across a cut
// connection. The agents answer in SWARM_RESULT_FILE, so that their stdout is free text, or on stdout as before.
import { execa } from 'execa';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LogEntry } from '../../src/contract/jobs.js';
import { agentProgram, installTestBundle } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { agentsDir } from './agents.js';
import {
  cli,
  DaemonProcess,
  executeOverHttp,
  register,
  RequestLog,
  signedInNode,
  swarmNodeBin,
  waitUntilServing,
  type TestNode,
} from './support.js';

const OPS = 'agent_ops_monitor_004';

/**
 * Says it started (stdout and stderr), waits for `go-<run_id>` in the test agents' directory, says it is done and
 * answers in its result file, or exits 3 (`fails`).
 */
const talker = (fails: boolean): string =>
  agentProgram(`const { existsSync, writeFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  console.log('step 1: started ' + run.run_id);
  console.error('warming up \\u001b[1mnow\\u001b[0m');
  const go = join(process.env.SWARM_NODE_HOME, 'test-agents', 'go-' + run.run_id);
  const poll = setInterval(() => {
    if (!existsSync(go)) return;
    clearInterval(poll);
    console.log('step 2: done');
    if (${fails}) process.exit(3);
    writeFileSync(process.env.SWARM_RESULT_FILE, JSON.stringify({ summary: 'answered in the result file' }));
  }, 20);`);

/** A classic agent: diagnostics on stderr, its one JSON document on stdout, and it succeeds. */
const CHATTY = agentProgram(`console.error('diagnostic one');
  console.error('\\u001b[31mdiagnostic two\\u001b[0m');
  process.stdout.write(JSON.stringify({ summary: 'answered on stdout' }));`);

/**
 * Writes lines of JSON of some kilobytes on stdout: a document in no shape the CLI knows, the beginning of one longer
 * than a log line, and its answer, a review with findings, as a classic agent answers on stdout.
 */
const REVIEWER =
  agentProgram(`const findings = Array.from({ length: 40 }, (_, i) => ({ file: 'src/app' + i + '.ts', line: i + 1, severity: i === 0 ? 'error' : 'warning', message: 'finding ' + i, evidence: 'x'.repeat(150) }));
  console.log(JSON.stringify({ telemetry: Array.from({ length: 30 }, (_, i) => ({ sample: i, value: 'v'.repeat(40) })), host: 'h', took_ms: 5 }));
  console.log(JSON.stringify({ blob: 'b'.repeat(20000) }));
  const answer = JSON.stringify({ summary: 'reviewed 40 files', findings });
  // Its answer in the result file, so that its stdout may hold other lines; and on stdout, as a classic agent's.
  (await import('node:fs')).writeFileSync(process.env.SWARM_RESULT_FILE, answer);
  process.stdout.write(answer);`);

/** Lines past the 4 MiB cap, and one longer than a log line may be; the answer in the result file. */
const FLOOD = agentProgram(`const { writeFileSync } = await import('node:fs');
  process.stdout.write('y'.repeat(20000) + '\\n');
  const line = 'z'.repeat(1023) + '\\n';
  for (let i = 0; i < 5 * 1024; i++) process.stdout.write(line);
  writeFileSync(process.env.SWARM_RESULT_FILE, '{"summary": "flooded"}');`);

/** Says so every 100 ms until it is stopped. */
const TICKER = agentProgram(`setInterval(() => console.log('tick'), 100);`);

function release(node: TestNode, runId: string): void {
  writeFileSync(join(agentsDir(node), `go-${runId}`), '');
}

/** `swarm-node logs … --follow` as a subprocess: its stdout lines as they come, and its end. */
function followCli(node: TestNode, args: string[]) {
  const child = execa('node', [swarmNodeBin(), 'logs', ...args, '--follow'], {
    env: node.env,
    reject: false,
    stdin: 'ignore',
    buffer: { stdout: true, stderr: true },
    lines: false,
  });
  let seen = '';
  child.stdout!.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  return {
    child,
    lineArrived: (text: string) =>
      waitFor(async () => (seen.includes(text) ? true : undefined), `"${text}" from swarm-node logs --follow (so far: ${seen})`, 20_000),
  };
}

describe('swarm-node logs: a run on a real daemon', () => {
  const requests = new RequestLog();
  const service = useSvcApi(() => ({ logger: { level: 'info', stream: requests } }));

  async function servingNode(label: string, program: string): Promise<{ node: TestNode; daemon: DaemonProcess }> {
    const node = await signedInNode(service.baseUrl, { fundCents: 200, label });
    installTestBundle(node.home, OPS, program);
    await register(node, OPS);
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, OPS);
    return { node, daemon };
  }

  it('a long run followed live: each line as the agent writes it, stderr apart, then exit 0 when it succeeded', async () => {
    const { node, daemon } = await servingNode('follow', talker(false));
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    expect(started.status, started.text).toBe(202);
    const runId = started.body.run_id as string;
    const follow = followCli(node, [runId]);
    // The agent goes on only once its first line came through the follow: it cannot have come any other way.
    await follow.lineArrived(`step 1: started ${runId}`);
    await follow.lineArrived('[stderr] warming up \\u001b[1mnow\\u001b[0m');
    release(node, runId);
    const result = await follow.child;
    expect(result.exitCode, String(result.stderr)).toBe(0);
    // The escape sequences as visible text: a log line cannot restyle or clear the terminal.
    expect(String(result.stdout).split('\n')).toEqual([
      `step 1: started ${runId}`,
      '[stderr] warming up \\u001b[1mnow\\u001b[0m',
      'step 2: done',
    ]);
    expect(String(result.stderr)).toContain(`Run ${runId} succeeded.`);

    // The answer came from the result file; stdout was only log.
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}`, { token: node.token });
    expect(run.body).toMatchObject({ status: 'succeeded', output: { summary: 'answered in the result file' } });
    const json = await cli(node, ['--json', 'logs', runId]);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(json.json).toMatchObject({ run_id: runId, finished: true, truncated: false, status: 'succeeded' });
    expect(json.json.entries.map((entry: LogEntry) => [entry.seq, entry.stream])).toEqual([
      [0, 'stdout'],
      [1, 'stderr'],
      [2, 'stdout'],
    ]);
    expect(await daemon.stop()).toBe(0);
  });

  it("keeps a succeeded run's stderr; control characters are shown escaped, kept as they came", async () => {
    const { node, daemon } = await servingNode('stderr', CHATTY);
    const ran = await executeOverHttp(service.baseUrl, node, OPS);
    expect(ran.body).toMatchObject({ status: 'succeeded', output: { summary: 'answered on stdout' } });
    const shown = await cli(node, ['logs', ran.body.run_id]);
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n')).toEqual([
      '[stderr] diagnostic one',
      '[stderr] \\u001b[31mdiagnostic two\\u001b[0m',
      '{"summary":"answered on stdout"}',
    ]);
    const stored = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${ran.body.run_id}/logs`, { token: node.token });
    expect(stored.body.entries[1].text).toBe('\u001b[31mdiagnostic two\u001b[0m');
    expect(await daemon.stop()).toBe(0);
  });

  it("an agent's JSON answer is shown for a person: its summary and findings as run shows them, another object by its keys", async () => {
    const { node, daemon } = await servingNode('reviewer', REVIEWER);
    const ran = await executeOverHttp(service.baseUrl, node, OPS);
    const runId = ran.body.run_id as string;
    expect(ran.body).toMatchObject({ status: 'succeeded', output: { summary: 'reviewed 40 files' } });
    const shown = await cli(node, ['logs', runId]);
    expect(shown.exitCode, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    const whole = `whole: swarm-node runs show ${runId} --json]`;
    expect(lines[0]).toMatch(new RegExp(`^\\[answer, a JSON object of \\d+\\.\\d KiB; ${whole.replace(/[[\]]/g, '\\$&')}$`));
    expect(lines[1]).toBe('  keys: telemetry, host, took_ms');
    expect(lines[2]).toMatch(/^\[answer, a JSON object cut at 16\.\d KiB in the log; whole: .*\] \{"blob":"bbbb/);
    expect(lines.slice(3, 8)).toEqual([
      expect.stringMatching(/^\[answer, a JSON object of \d+\.\d KiB;/),
      '  reviewed 40 files',
      '',
      '  Findings (40):',
      '    error src/app0.ts:1  finding 0',
    ]);
    expect(shown.stdout).toContain(`  … 20 more: swarm-node runs show ${runId} --json`);
    expect(shown.stdout).not.toContain('evidence');
    // --json keeps each line as the agent wrote it.
    const json = await cli(node, ['--json', 'logs', runId]);
    expect(JSON.parse((json.json.entries as LogEntry[]).at(-1)!.text)).toEqual(ran.body.output);
    expect(await daemon.stop()).toBe(0);
  });

  it('a log past 4 MiB ends with the truncation marker, said plainly; a line past 16 KiB is cut with a mark', async () => {
    const { node, daemon } = await servingNode('flood', FLOOD);
    const ran = await executeOverHttp(service.baseUrl, node, OPS);
    expect(ran.body).toMatchObject({ status: 'succeeded', output: { summary: 'flooded' } });
    const shown = await cli(node, ['--json', 'logs', ran.body.run_id]);
    expect(shown.exitCode, shown.stderr).toBe(0);
    const entries = shown.json.entries as LogEntry[];
    expect(shown.json.truncated).toBe(true);
    expect(entries[0]!.text).toBe(`${'y'.repeat(16 * 1024)} [… line cut at 16384 characters]`);
    expect(entries.at(-1)).toMatchObject({ stream: 'node', text: expect.stringContaining('log truncated') });
    expect(entries.slice(0, -1).reduce((sum, entry) => sum + Buffer.byteLength(entry.text), 0)).toBeLessThanOrEqual(4 * 1024 * 1024);
    const human = await cli(node, ['logs', ran.body.run_id]);
    expect(human.stderr).toContain('reached its 4 MiB cap');
    expect(human.stdout.trimEnd().split('\n').at(-1)).toMatch(/^\[node\] \[log truncated/);
    expect(await daemon.stop()).toBe(0);
  });

  it('--follow of a run that fails exits 1 naming why; a run of another user, or none, exits 5', async () => {
    const { node, daemon } = await servingNode('fails', talker(true));
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    const runId = started.body.run_id as string;
    const follow = followCli(node, ['--json', runId]);
    await follow.lineArrived('step 1: started');
    release(node, runId);
    const result = await follow.child;
    expect(result.exitCode).toBe(1);
    // JSON Lines: each entry, then the end; then the error document every command prints under --json.
    const [entry1, entry2, entry3, end, ...error] = String(result.stdout).split('\n');
    expect([entry1, entry2, entry3].map((line) => (JSON.parse(line!) as LogEntry).text)).toEqual([
      `step 1: started ${runId}`,
      'warming up \u001b[1mnow\u001b[0m',
      'step 2: done',
    ]);
    expect(JSON.parse(end!)).toEqual({ end: { run_id: runId, status: 'failed', error: 'exit', truncated: false, next_after: 2 } });
    expect(JSON.parse(error.join('\n'))).toMatchObject({ error: { code: 'failed', run_id: runId, status: 'failed', run_error: 'exit' } });

    const stranger = await signedInNode(service.baseUrl, { label: 'stranger', enroll: false });
    for (const id of [runId, '01a2ae1e-34f4-7451-80f7-cd968c2732e9']) {
      const refused = await cli(stranger, ['logs', id]);
      expect(refused.exitCode).toBe(5);
      expect(refused.stderr).toContain(`no run ${id} of yours`);
      expect(refused.stdout).toBe('');
    }
    expect(await daemon.stop()).toBe(0);
  });

  it('a run its user cancelled is stopped (told by the poll or the next batch of its log), and ends cancelled', async () => {
    const { node, daemon } = await servingNode('cancel', TICKER);
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    const runId = started.body.run_id as string;
    const follow = followCli(node, [runId]);
    await follow.lineArrived('tick');
    const cancel = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}/cancel`, { method: 'POST', token: node.token });
    expect(cancel.status, cancel.text).toBe(202);
    const result = await follow.child;
    expect(result.exitCode).toBe(1);
    // Stored failed with the reason cancelled (shown `cancelled` where the service marks the run so).
    expect(String(result.stderr)).toMatch(new RegExp(`run ${runId} ended (failed \\(cancelled\\)|cancelled)`));
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}`, { token: node.token });
    expect(run.body).toMatchObject({ charged_cents: 0, output: { error: 'cancelled', message: 'the run was cancelled by its user' } });
    expect(await daemon.stop()).toBe(0);
  });

  it('--follow asks again from where it was when its connection is cut: every line once', async () => {
    const { node, daemon } = await servingNode('cut', talker(false));
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    const runId = started.body.run_id as string;
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port) });
    try {
      const follows = () => requests.entries.filter((entry) => entry.route === '/v1/swarm/runs/:run_id/logs').length;
      const before = follows();
      const follow = followCli({ ...node, env: { ...node.env, SVC_BASE_URL: `http://127.0.0.1:${proxy.port}` } }, [runId]);
      await follow.lineArrived('[stderr] warming up \\u001b[1mnow\\u001b[0m');
      proxy.cut();
      proxy.restore();
      // The cut follow is over at the service (its response closed): the next one is the CLI asking again.
      await waitFor(async () => (follows() > before ? true : undefined), 'the cut follow to end at the service');
      release(node, runId);
      const result = await follow.child;
      expect(result.exitCode, String(result.stderr)).toBe(0);
      expect(String(result.stdout).split('\n')).toEqual([
        `step 1: started ${runId}`,
        '[stderr] warming up \\u001b[1mnow\\u001b[0m',
        'step 2: done',
      ]);
      await waitFor(async () => (follows() >= before + 2 ? true : undefined), 'the second follow to end at the service');
    } finally {
      await proxy.close();
    }
    expect(await daemon.stop()).toBe(0);
  });
});

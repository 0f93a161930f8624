// Runs as jobs with the real daemon (docs/api.md "Runs as jobs"): a run over its time limit is stopped and refunded,
// a cancel stops the agent within seconds, a clean stop marks the node offline and a run queued meanwhile starts
// when it is back, and a retry-safe run whose node was killed runs again on another node, charged once. The built
// binary against the real svc-api; the agents are test bundles (./agents.ts) that wait for the test's word.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { processIsAlive } from '../../src/node/host/process-alive.js';
import { agentEvents, releaseAgents, testAgentProgram } from './agents.js';
import {
  cli,
  DaemonProcess,
  executeOverHttp,
  ledgerKindsOf,
  register,
  runEnded,
  serviceRuns,
  signedInNode,
  waitUntilServing,
  type TestNode,
} from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
const EVENT_MS = 30_000;

async function agentStarted(node: TestNode, count = 1): Promise<{ run_id: string; pid: number }[]> {
  return waitFor(
    async () => {
      const starts = agentEvents(node, 'start');
      return starts.length >= count ? starts : undefined;
    },
    `${count} agent start(s)`,
    EVENT_MS,
  );
}

describe('swarm-node daemon: runs as jobs', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  const ended = (node: TestNode, runId: string) => runEnded(service.baseUrl, node, runId, EVENT_MS);
  const ledgerOf = (runId: string) => ledgerKindsOf(service.db, runId);

  it('a run past its time limit is stopped, its agent gone, and fails timeout, refunded', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'limit', agents: { [OPS]: 'held' } });
    await register(node, OPS);
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, OPS);
    const started = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token: node.token,
      body: { user_id: node.email, agent_id: OPS, timeout_seconds: 2 },
      headers: { 'idempotency-key': crypto.randomUUID(), prefer: 'respond-async' },
    });
    expect(started.body).toMatchObject({ status: 'queued', timeout_seconds: 2 });
    const [agent] = await agentStarted(node);
    const run = await ended(node, started.body.run_id);
    expect(run).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'timeout' } });
    expect(run.output.message).toContain('2 s');
    expect(processIsAlive(agent!.pid)).toBe(false);
    expect(agentEvents(node, 'end')).toEqual([]);
    expect(ledgerOf(run.run_id)).toEqual(['debit', 'refund']);
    expect(await daemon.stop()).toBe(0);
  });

  it('swarm-node cancel stops a running agent within seconds; the run ends cancelled, refunded once', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'cancel', agents: { [OPS]: 'held' } });
    await register(node, OPS);
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, OPS);
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    const [agent] = await agentStarted(node);
    const cancel = await cli(node, ['--json', 'cancel', started.body.run_id]);
    expect(cancel.exitCode, cancel.stderr).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({ stopping: true, run: { run_id: started.body.run_id, status: 'running' } });
    const run = await ended(node, started.body.run_id);
    expect(run).toMatchObject({ status: 'cancelled', charged_cents: 0, output: { error: 'cancelled' }, node_id: expect.any(String) });
    // Stopped by the node (its report), not by the service's grace.
    expect(serviceRuns(service.db, node.email)[0]).toMatchObject({ finished_by: 'node' });
    await waitFor(async () => (processIsAlive(agent!.pid) ? undefined : true), 'the agent to be gone', EVENT_MS);
    expect(ledgerOf(run.run_id)).toEqual(['debit', 'refund']);
    // A second cancel answers the same; one of a finished run is refused.
    expect((await cli(node, ['cancel', started.body.run_id])).exitCode).toBe(0);
    expect(await daemon.stop()).toBe(0);
  });

  it('a clean stop marks the node offline at once; a run queued meanwhile starts when the daemon is back', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'offline' });
    await register(node, OPS);
    const first = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, OPS);
    expect(await first.stop()).toBe(0);
    expect(first.events('node_offline')).toHaveLength(1);
    const fleet = await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token: node.token });
    expect(fleet.body.nodes[0].online).toBe(false);

    const queued = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    expect(queued.status, queued.text).toBe(202);
    expect(queued.body).toMatchObject({ status: 'queued', node_id: null });
    const second = DaemonProcess.start(node);
    const run = await ended(node, queued.body.run_id);
    expect(run).toMatchObject({ status: 'succeeded', charged_cents: 4 });
    expect(await second.stop()).toBe(0);
  });

  it('a retry-safe run whose node is killed mid-run runs again on another node, under the same id, charged once', async () => {
    const a = await signedInNode(service.baseUrl, { fundCents: 100, label: 'retry-a', agents: { [OPS]: 'held' } });
    const b = await signedInNode(service.baseUrl, { email: a.email, token: a.token, label: 'retry-b', agents: { [OPS]: 'held' } });
    // The user's own version of the agent says its runs may run again (agent.json retry_safe): the held test agent.
    const bundle = join(tempDir('retry-bundle-'), 'ops');
    mkdirSync(bundle);
    writeFileSync(
      join(bundle, 'agent.json'),
      JSON.stringify({
        agent_id: OPS,
        version: '1.0.0-retry',
        entry: ['node', 'main.mjs'],
        input_schema: { type: 'object' },
        retry_safe: true,
      }),
    );
    writeFileSync(join(bundle, 'main.mjs'), testAgentProgram('held'));
    const uploaded = await cli(a, ['agent', 'upload', bundle]);
    expect(uploaded.exitCode, uploaded.stderr).toBe(0);
    await register(a, OPS);
    const first = DaemonProcess.start(a);
    await waitUntilServing(service.baseUrl, a, OPS);
    const started = await executeOverHttp(service.baseUrl, a, OPS, { prefer: 'respond-async' });
    await agentStarted(a);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');

    await register(b, OPS);
    const second = DaemonProcess.start(b);
    const [retried] = await agentStarted(b);
    expect(retried!.run_id).toBe(started.body.run_id);
    releaseAgents(b);
    const run = await ended(b, started.body.run_id);
    expect(run).toMatchObject({ status: 'succeeded', charged_cents: 4, attempt: 2 });
    expect(run.attempts.map((attempt: { outcome: string }) => attempt.outcome)).toEqual(['node_lost', 'succeeded']);
    expect(ledgerOf(run.run_id)).toEqual(['debit']);
    expect(await second.stop()).toBe(0);
  });
});

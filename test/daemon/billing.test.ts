// swarm-node daemon billing (docs/decisions/0008-execute-debits-atomically.md): the built binary against the real
// svc-api, the agents running on the node as test bundles (./agents.ts). A daemon killed mid-run never starts the
// agent again: the next start
// reports the run interrupted and it is refunded; a node that does not come back loses its runs to the lease
// (node_lost, refunded once) and its late result is refused. SIGTERM lets runs finish within the drain, then stops
// the agents and reports their runs failed (refunded); exit 0 either way.
import { describe, expect, it } from 'vitest';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { agentEvents, releaseAgents, releaseRun, startsByRun } from './agents.js';
import {
  chargedCents,
  DaemonProcess,
  executeOverHttp,
  expectChargedForNodeResults,
  nodeDb,
  register,
  RequestLog,
  serviceRuns,
  signedInNode,
  waitUntilServing,
  type TestNode,
} from './support.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';

const SALES = 'agent_sales_outreach_008'; // 8 cents; not retry-safe, so a run lost with its node is refunded, not run again
const RAG = 'agent_research_rag_015'; // 15 cents

function execution(node: TestNode, runId: string): { status: string; result_status: string | null } | undefined {
  const db = nodeDb(node);
  try {
    return db
      .prepare<[string], { status: string; result_status: string | null }>('SELECT status, result_status FROM executions WHERE run_id = ?')
      .get(runId);
  } finally {
    db.close();
  }
}

function ledgerOf(serviceDb: SqliteDatabase, runId: string): { kind: string; amount_cents: number }[] {
  return serviceDb
    .prepare<[string], { kind: string; amount_cents: number }>(
      'SELECT kind, amount_cents FROM ledger_entries WHERE run_id = ? ORDER BY entry_id',
    )
    .all(runId);
}

async function agentStarted(node: TestNode, count = 1): Promise<string[]> {
  const starts = await waitFor(async () => {
    const events = agentEvents(node, 'start');
    return events.length >= count ? events : undefined;
  }, `${count} agent start(s)`);
  return starts.map((event) => event.run_id);
}

/** The agents of a killed daemon notice it and exit (systemd would kill the unit's cgroup): nothing is left behind. */
async function agentsOrphaned(node: TestNode, count: number): Promise<void> {
  await waitFor(async () => (agentEvents(node, 'orphaned').length >= count ? true : undefined), `${count} orphaned agent(s) to exit`);
}

describe('swarm-node daemon: billing', () => {
  const requests = new RequestLog();
  const service = useSvcApi(() => ({ logger: { level: 'info', stream: requests } }));

  it('SIGKILL mid-run: the next start reports the run interrupted; refunded once, the agent never started again', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'sigkill', agents: { [SALES]: 'held' } });
    await register(node, SALES);
    const first = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, SALES);
    const startedRun = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
    expect(startedRun.status, startedRun.text).toBe(202);
    const [runId] = await agentStarted(node);
    expect(runId).toBe(startedRun.body.run_id);
    expect(execution(node, runId!)).toEqual({ status: 'running', result_status: null });
    expect(serviceRuns(service.db, node.email)).toEqual([expect.objectContaining({ run_id: runId, status: 'running', charged_cents: 8 })]);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    await agentsOrphaned(node, 1);

    const second = DaemonProcess.start(node);
    const settled = await second.waitForEvent('pending_runs_settled');
    expect(settled).toMatchObject({ reported: '1', expired: '0', left: '0' });
    expect(execution(node, runId!)).toEqual({ status: 'reported', result_status: 'failed' });
    const [run] = serviceRuns(service.db, node.email);
    expect(run).toMatchObject({ status: 'failed', charged_cents: 0, finished_by: 'node' });
    expect(JSON.parse(run!.output_json!)).toMatchObject({ error: 'interrupted' });
    expect(ledgerOf(service.db, runId!)).toEqual([
      { kind: 'debit', amount_cents: 8 },
      { kind: 'refund', amount_cents: 8 },
    ]);
    expect(startsByRun(node)).toEqual(new Map([[runId, 1]]));
    expect(await second.stop()).toBe(0);
    expect(expectChargedForNodeResults(service.db, node.email)).toMatchObject({ runs: 1, cents: 0 });
    expect(startsByRun(node)).toEqual(new Map([[runId, 1]]));
  });

  it('SIGTERM: runs in flight finish within the drain; past the drain their agents are stopped and the runs refunded; exit 0, nothing pending', async () => {
    for (const pastDrain of [false, true]) {
      const node = await signedInNode(service.baseUrl, {
        fundCents: 500,
        label: pastDrain ? 'drain-past' : 'drain',
        agents: { [RAG]: 'held', [SALES]: 'held' },
      });
      await register(node, RAG);
      await register(node, SALES);
      const daemon = DaemonProcess.start(node, ['--tick-ms', '100', '--backoff-ms', '400', ...(pastDrain ? ['--drain-ms', '100'] : [])]);
      await waitUntilServing(service.baseUrl, node, SALES);
      // Two runs started over HTTP: both on this node, in its two slots.
      const started = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
      expect(started.status, started.text).toBe(202);
      const other = await executeOverHttp(service.baseUrl, node, RAG, { prefer: 'respond-async' });
      expect(other.status, other.text).toBe(202);
      await agentStarted(node, 2);

      const stoppedAt = Date.now();
      const exit = daemon.stop('SIGTERM');
      await daemon.waitForEvent('stopping', (event) => event.in_flight_runs === '2');
      if (!pastDrain) releaseAgents(node);
      expect(await exit).toBe(0);

      const followed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${started.body.run_id}?wait=10`, { token: node.token });
      const followedOther = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${other.body.run_id}?wait=10`, { token: node.token });
      if (pastDrain) {
        expect(daemon.events('stopping_agents')).toEqual([expect.objectContaining({ in_flight_runs: '2' })]);
        expect(followed.body).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'aborted' } });
        expect(followedOther.body).toMatchObject({ status: 'failed', charged_cents: 0 });
        expect(agentEvents(node, 'end')).toEqual([]);
      } else {
        expect(daemon.events('stopping_agents')).toEqual([]);
        expect(followed.body).toMatchObject({ status: 'succeeded', charged_cents: 8, output: { summary: 'test agent' } });
        expect(followedOther.body).toMatchObject({ status: 'succeeded', charged_cents: 15 });
        expect(Date.parse(followedOther.body.finished_at)).toBeGreaterThanOrEqual(stoppedAt);
      }
      expect(daemon.events('daemon_stopped')).toEqual([expect.objectContaining({ pending_runs: '0' })]);
      // No new run after the signal, and each agent started once.
      expect([...startsByRun(node).values()]).toEqual([1, 1]);
      const { cents } = expectChargedForNodeResults(service.db, node.email);
      expect(cents).toBe(pastDrain ? 0 : 15 + 8);
    }
  });
});

describe('swarm-node daemon: a node lost mid-run (short leases)', () => {
  const requests = new RequestLog();
  const service = useSvcApi(() => ({ runTiming: TEST_RUN_TIMING, logger: { level: 'info', stream: requests } }));

  /** The statuses of the results nodes reported (the tests of this block run one at a time, one run each). */
  function results(): number[] {
    return requests.entries.filter((entry) => entry.route === '/v1/swarm/runs/:run_id/result').map((entry) => entry.status!);
  }

  it('SIGKILLed and not restarted: node_lost once the lease ran out, refunded once; the result it reports when it comes back is refused', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'lost', agents: { [SALES]: 'held' } });
    await register(node, SALES);
    const first = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, SALES);
    expect((await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' })).status).toBe(202);
    const [runId] = await agentStarted(node);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    await agentsOrphaned(node, 1);

    const lost = await waitFor(
      async () => serviceRuns(service.db, node.email).find((run) => run.status !== 'running'),
      'the lease to run out',
      15_000,
    );
    expect(lost).toMatchObject({ run_id: runId, status: 'failed', charged_cents: 0, finished_by: 'service' });
    expect(JSON.parse(lost.output_json!)).toMatchObject({ error: 'node_lost' });
    expect(ledgerOf(service.db, runId!)).toEqual([
      { kind: 'debit', amount_cents: 8 },
      { kind: 'refund', amount_cents: 8 },
    ]);
    const resultsBefore = results().length;

    // Back after the lease: its report (interrupted) is refused, and its execution row takes the service's answer.
    const second = DaemonProcess.start(node);
    await second.waitForEvent('pending_runs_settled');
    expect(results().slice(resultsBefore)).toEqual([409]);
    expect(execution(node, runId!)).toMatchObject({ status: 'lost' });
    expect(serviceRuns(service.db, node.email)).toEqual([lost]);
    expect(ledgerOf(service.db, runId!)).toHaveLength(2);
    expect(await second.stop()).toBe(0);
    expect(expectChargedForNodeResults(service.db, node.email)).toMatchObject({ runs: 1, cents: 0 });
    expect(startsByRun(node)).toEqual(new Map([[runId, 1]]));
  });

  it('stalled past its lease (SIGSTOP): the agent succeeds meanwhile, but the late result changes nothing; nothing charged', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'stalled', agents: { [SALES]: 'held' } });
    const resultsBefore = results().length;
    await register(node, SALES);
    const daemon = DaemonProcess.start(node);
    await waitUntilServing(service.baseUrl, node, SALES);
    const started = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
    expect(started.status, started.text).toBe(202);
    const [runId] = await agentStarted(node);
    expect(runId).toBe(started.body.run_id);

    process.kill(daemon.pid, 'SIGSTOP');
    try {
      releaseRun(node, runId!);
      await waitFor(async () => (agentEvents(node, 'end').length === 1 ? true : undefined), 'the agent to finish');
      const lost = await waitFor(
        async () => serviceRuns(service.db, node.email).find((run) => run.status !== 'running'),
        'the lease to run out',
        15_000,
      );
      expect(JSON.parse(lost.output_json!)).toMatchObject({ error: 'node_lost' });
    } finally {
      process.kill(daemon.pid, 'SIGCONT');
    }
    const before = serviceRuns(service.db, node.email);
    await daemon.waitForEvent('run_lost', (event) => event.run_id === runId);
    expect(execution(node, runId!)).toMatchObject({ status: 'lost' });
    // Whether the late success was sent (and refused) or dropped once a renewal said the run was lost: it changed nothing.
    expect(
      results()
        .slice(resultsBefore)
        .every((status) => status === 409),
    ).toBe(true);
    expect(serviceRuns(service.db, node.email)).toEqual(before);
    expect(chargedCents(service.db, node.email)).toBe(0);
    expect(await daemon.stop()).toBe(0);
    expect(expectChargedForNodeResults(service.db, node.email)).toEqual({ runs: 1, succeeded: 0, cents: 0 });
  });
});

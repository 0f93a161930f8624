// swarm-node daemon billing (docs/decisions/0008-execute-debits-atomically.md): the built binary against the real
// svc-api, the agents running on the node as test bundles (./agents.ts). Insufficient balance pauses without
// hammering execute and resumes after funding. A daemon killed mid-run never starts the agent again: the next start
// reports the run interrupted and it is refunded; a node that does not come back loses its runs to the lease
// (node_lost, refunded once) and its late result is refused. SIGTERM lets runs finish within the drain, then stops
// the agents and reports their runs failed (refunded); exit 0 either way.
import { describe, expect, it } from 'vitest';
import { TEST_RUN_TIMING } from '../api/execute-fixtures.js';
import { fundWallet, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { agentEvents, releaseAgents, releaseRun, startsByRun } from './agents.js';
import {
  chargedCents,
  cli,
  DaemonProcess,
  executeOverHttp,
  expectChargedForNodeResults,
  expectExactlyOnce,
  localRuns,
  nodeDb,
  register,
  RequestLog,
  serviceRuns,
  signedInNode,
  waitUntilServing,
  type TestNode,
} from './support.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents
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

  it('pauses on insufficient balance, logs the wallet URL once, re-checks the balance slowly without calling execute, resumes after funding', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 8, label: 'balance' });
    await register(node, OPS, '--every', '1s');
    const executesBefore = requests.executes();
    const daemon = DaemonProcess.start(node);

    const paused = await daemon.waitForEvent('agent_paused');
    expect(paused).toMatchObject({
      level: 'warn',
      agent: OPS,
      reason: 'insufficient_balance',
      balance_cents: '0',
      price_cents: '4',
      wallet_login_url: `${service.walletUrl}/login`,
    });
    expect(daemon.events('run_succeeded')).toHaveLength(2);
    const status = await cli(node, ['--json', 'status']);
    expect(status.json.daemon.agents[0]).toMatchObject({
      agent_id: OPS,
      paused_reason: 'insufficient_balance',
      paused_until: expect.any(String),
    });
    expect(status.json.problems).toContainEqual(expect.stringMatching(/^agent_ops_monitor_004 is paused \(insufficient_balance\) until /));

    // While paused: the balance is read on a doubling backoff (0.4 s, 0.8 s, 1.6 s …); execute is not called.
    const checks = await daemon.waitForCount('balance_still_low', 2, 5_000);
    const waits = checks.map((event) => Date.parse(event.next_check_at!) - Date.parse(event.ts!));
    expect(waits[1]!).toBeGreaterThan(waits[0]!);
    expect(requests.executes() - executesBefore).toBe(3);
    expect(requests.executes(402)).toBe(1);

    // Funded through the sandbox provider: the next check resumes the agent; three more runs, then a new pause.
    await fundWallet(service.baseUrl, node.email, 12);
    await daemon.waitForEvent('agent_resumed', (event) => event.balance_cents === '12', 15_000);
    await daemon.waitForCount('agent_paused', 2, 15_000);
    expect(daemon.events('run_succeeded')).toHaveLength(5);
    expect(await daemon.stop()).toBe(0);

    // One wallet_login_url per pause episode, one 402 per episode, every other execute a charged run.
    expect(daemon.events('agent_paused').map((event) => event.wallet_login_url)).toEqual([
      paused.wallet_login_url,
      paused.wallet_login_url,
    ]);
    expect(daemon.output.split(service.walletUrl).length - 1).toBe(2);
    expect(requests.executes(402)).toBe(2);
    expect(requests.executes() - executesBefore).toBe(5 + 2);
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 5, cents: 20 });
    expect(daemon.output).not.toContain(node.token);
  });

  it('SIGKILL mid-run: the next start reports the run interrupted; refunded once, journaled failed, the agent never started again', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'sigkill', agents: { [SALES]: 'held' } });
    await register(node, SALES, '--every', '1h');
    const first = DaemonProcess.start(node);
    const [runId] = await agentStarted(node);
    expect(localRuns(node)).toEqual([expect.objectContaining({ status: 'pending', run_id: null })]);
    expect(serviceRuns(service.db, node.email)).toEqual([expect.objectContaining({ run_id: runId, status: 'running', charged_cents: 8 })]);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    await agentsOrphaned(node, 1);
    const [killed] = localRuns(node);

    const second = DaemonProcess.start(node);
    const settled = await second.waitForEvent('pending_runs_settled');
    expect(settled).toMatchObject({ reported: '1', settled: '1', expired: '0', left: '0' });
    expect(second.events('run_settled')).toEqual([
      expect.objectContaining({ agent: SALES, status: 'failed', run_id: runId, charged_cents: '0', key: killed!.idempotency_key }),
    ]);
    expect(localRuns(node)).toEqual([
      expect.objectContaining({ idempotency_key: killed!.idempotency_key, status: 'failed', charged_cents: 0, run_id: runId }),
    ]);
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
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 1, cents: 0 });
    expect(startsByRun(node)).toEqual(new Map([[runId, 1]]));
  });

  it('SIGTERM: runs in flight finish within the drain; past the drain their agents are stopped and the runs refunded; exit 0, nothing pending', async () => {
    for (const pastDrain of [false, true]) {
      const node = await signedInNode(service.baseUrl, {
        fundCents: 500,
        label: pastDrain ? 'drain-past' : 'drain',
        agents: { [RAG]: 'held', [SALES]: 'held' },
      });
      await register(node, RAG, '--every', '1h');
      await register(node, SALES);
      const daemon = DaemonProcess.start(node, ['--tick-ms', '100', '--backoff-ms', '400', ...(pastDrain ? ['--drain-ms', '100'] : [])]);
      await waitUntilServing(service.baseUrl, node, SALES);
      // One run of its own schedule and one started over HTTP: both on this node, in its two slots.
      const started = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
      expect(started.status, started.text).toBe(202);
      await agentStarted(node, 2);

      const stoppedAt = Date.now();
      const exit = daemon.stop('SIGTERM');
      await daemon.waitForEvent('stopping', (event) => event.in_flight_runs === '2');
      if (!pastDrain) releaseAgents(node);
      expect(await exit).toBe(0);

      const followed = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${started.body.run_id}?wait=10`, { token: node.token });
      const [scheduled] = localRuns(node);
      if (pastDrain) {
        expect(daemon.events('stopping_agents')).toEqual([expect.objectContaining({ in_flight_runs: '2' })]);
        expect(followed.body).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'aborted' } });
        expect(scheduled).toMatchObject({ status: 'failed', charged_cents: 0 });
        expect(agentEvents(node, 'end')).toEqual([]);
      } else {
        expect(daemon.events('stopping_agents')).toEqual([]);
        expect(followed.body).toMatchObject({ status: 'succeeded', charged_cents: 8, output: { summary: 'test agent' } });
        expect(scheduled).toMatchObject({ status: 'succeeded', charged_cents: 15 });
        expect(scheduled!.finished_at!).toBeGreaterThanOrEqual(stoppedAt);
      }
      expect(daemon.events('daemon_stopped')).toEqual([expect.objectContaining({ pending_runs: '0' })]);
      // No new run after the signal, and each agent started once.
      expect([...startsByRun(node).values()]).toEqual([1, 1]);
      expect(localRuns(node)).toHaveLength(1);
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
    await register(node, SALES, '--every', '1h');
    const first = DaemonProcess.start(node);
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

    // Back after the lease: its report (interrupted) is refused, and its journal row takes the service's answer.
    const second = DaemonProcess.start(node);
    await second.waitForEvent('pending_runs_settled', (event) => event.settled === '1');
    expect(results().slice(resultsBefore)).toEqual([409]);
    expect(execution(node, runId!)).toMatchObject({ status: 'lost' });
    expect(second.events('run_settled')).toEqual([expect.objectContaining({ status: 'failed', run_id: runId, charged_cents: '0' })]);
    expect(serviceRuns(service.db, node.email)).toEqual([lost]);
    expect(ledgerOf(service.db, runId!)).toHaveLength(2);
    expect(await second.stop()).toBe(0);
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 1, cents: 0 });
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

// Faults without wasted work (docs/api.md "Leases as durations", docs/operations.md "Faults"): a node cut off from
// the service keeps the result its agent finished meanwhile and reports it once the service answers again, within
// the lease, and takes new work at once; a node frozen (SIGSTOP) past the lease of a run it was handed never starts
// its agent; a node whose wall clock is ten minutes behind renews its leases like any other. The built daemon in its
// own process against the real svc-api; the outage is a TCP proxy the test cuts, the frozen node a real SIGSTOP, the
// skewed clock libfaketime. Every wait is for an event: a line of the daemon, a row, an agent's start.
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { startHttpFaultProxy } from '../helpers/http-fault-proxy.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { agentEvents, releaseAgents, releaseRun } from './agents.js';
import { LIBFAKETIME } from '../helpers/faketime.js';
import {
  DaemonProcess,
  executeOverHttp,
  ledgerKindsOf,
  nodeDb,
  register,
  runEnded,
  runOf as runOfService,
  serviceRuns,
  signedInNode,
  waitUntilServing,
  type TestNode,
} from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents, retry-safe
const SALES = 'agent_sales_outreach_008'; // 8 cents, not retry-safe
const EVENT_MS = 30_000;
/** Ticks fast, but the slow re-checks at their default (30 s): what a node in the field waits. */
const FIELD_TIMING = ['--tick-ms', '100'];

async function agentStartedFor(node: TestNode, runId: string): Promise<void> {
  await waitFor(
    async () => (agentEvents(node, 'start').some((event) => event.run_id === runId) ? true : undefined),
    `the agent of run ${runId} to start`,
    EVENT_MS,
  );
}

function executionStatus(node: TestNode, runId: string): string | undefined {
  const db = nodeDb(node);
  try {
    return db.prepare<[string], { status: string }>('SELECT status FROM executions WHERE run_id = ?').get(runId)?.status;
  } finally {
    db.close();
  }
}

describe('swarm-node daemon: faults without wasted work', () => {
  // A lease long enough that only a node that stays paused for tens of seconds loses its run; a poll held 10 s.
  const service = useSvcApi({
    runTiming: { leaseMs: 20_000, pollHoldMs: 10_000, sweepMs: 100, executeWaitMs: 10_000, queueTimeoutMs: 120_000 },
  });
  const runOf = (node: TestNode, runId: string) => runOfService(service.baseUrl, node, runId, 5);
  const ended = (node: TestNode, runId: string) => runEnded(service.baseUrl, node, runId, EVENT_MS);
  const ledgerOf = (runId: string) => ledgerKindsOf(service.db, runId);

  it('a result finished while the service is unreachable is reported when it answers again, and the node takes work at once', async () => {
    const port = Number(new URL(service.baseUrl).port);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port });
    try {
      // The node reaches the service only through the proxy; the test and the user's client go direct.
      const node = await signedInNode(`http://127.0.0.1:${proxy.port}`, { fundCents: 100, label: 'outage', agents: { [OPS]: 'held' } });
      await register(node, OPS);
      const daemon = DaemonProcess.start(node, FIELD_TIMING);
      await waitUntilServing(service.baseUrl, node, OPS);
      const first = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
      await agentStartedFor(node, first.body.run_id);

      proxy.cut();
      await daemon.waitForEvent('paused_all', (event) => event.reason === 'service_unreachable', EVENT_MS);
      releaseRun(node, first.body.run_id);
      // The agent answered during the outage: its result is kept in the journal, not yet reported.
      await waitFor(
        async () => (executionStatus(node, first.body.run_id) === 'finished' ? true : undefined),
        'the result kept in the journal',
        EVENT_MS,
      );
      expect((await runOf(node, first.body.run_id)).body.status).toBe('running');

      proxy.restore();
      const run = await ended(node, first.body.run_id);
      // Reported by the node within its lease: charged once, never failed node_lost, never refunded.
      expect(run).toMatchObject({ status: 'succeeded', charged_cents: 4, node_id: expect.any(String), attempt: 1 });
      expect(ledgerOf(run.run_id)).toEqual(['debit']);
      await daemon.waitForEvent('resumed_all', () => true, EVENT_MS);

      // Polling again: a new run is taken without the daemon being told anything.
      releaseAgents(node);
      const second = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
      expect(await ended(node, second.body.run_id)).toMatchObject({ status: 'succeeded', charged_cents: 4 });
      expect(
        agentEvents(node, 'start')
          .map((event) => event.run_id)
          .sort(),
      ).toEqual([first.body.run_id, second.body.run_id].sort());
      expect(await daemon.stop()).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('a result the service fails to take (500) is sent again within the lease, not left for a later settlement', async () => {
    const proxy = await startHttpFaultProxy(service.baseUrl);
    try {
      const node = await signedInNode(proxy.baseUrl, { fundCents: 100, label: 'result-500', agents: { [OPS]: 'held' } });
      await register(node, OPS);
      const daemon = DaemonProcess.start(node, FIELD_TIMING);
      await waitUntilServing(service.baseUrl, node, OPS);
      const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
      await agentStartedFor(node, started.body.run_id);
      // Polls and renewals go through; the result is refused with a server error until the test heals the proxy.
      proxy.fail(/\/result$/, 500);
      releaseAgents(node);
      await waitFor(async () => (proxy.refused >= 2 ? true : undefined), 'the result sent again after a refusal', EVENT_MS);
      proxy.heal();
      const run = await ended(node, started.body.run_id);
      expect(run).toMatchObject({ status: 'succeeded', charged_cents: 4, attempt: 1 });
      expect(ledgerOf(run.run_id)).toEqual(['debit']);
      expect(await daemon.stop()).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it("time the daemon spends frozen is not its agent's: an answer given during the freeze, past the limit, stands", async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'stopped', agents: { [OPS]: 'held' } });
    await register(node, OPS);
    const daemon = DaemonProcess.start(node, FIELD_TIMING);
    await waitUntilServing(service.baseUrl, node, OPS);
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async', timeoutSeconds: 2 });
    const runId = started.body.run_id as string;
    await agentStartedFor(node, runId);
    const agentStart = agentEvents(node, 'start').find((event) => event.run_id === runId)!.at;
    daemon.child.kill('SIGSTOP');
    try {
      // The agent answers while the daemon is stopped, within its 2 s; the daemon stays stopped past them.
      releaseRun(node, runId);
      await waitFor(
        async () =>
          agentEvents(node, 'end').some((event) => event.run_id === runId) && Date.now() > agentStart + 4_000 ? true : undefined,
        'the agent to answer, and the limit to pass',
        EVENT_MS,
      );
    } finally {
      daemon.child.kill('SIGCONT');
    }
    expect(await ended(node, runId)).toMatchObject({ status: 'succeeded', charged_cents: 4, timeout_seconds: 2 });
    expect(await daemon.stop()).toBe(0);
  });
});

describe('swarm-node daemon: frozen and skewed nodes', () => {
  // Short leases (a poll held 3 s): the service gives up on a silent node in seconds.
  const service = useSvcApi({
    runTiming: { leaseMs: 6_000, pollHoldMs: 3_000, sweepMs: 100, executeWaitMs: 10_000, queueTimeoutMs: 120_000 },
  });
  const runOf = (node: TestNode, runId: string) => runOfService(service.baseUrl, node, runId, 5);
  const ended = (node: TestNode, runId: string) => runEnded(service.baseUrl, node, runId, EVENT_MS);
  const ledgerOf = (runId: string) => ledgerKindsOf(service.db, runId);

  /**
   * Freezes the daemon and starts a run that its poll, held open at the service, is handed. A freeze that fell
   * between two polls (no poll open) hands it nothing: that run is cancelled and the freeze tried again.
   */
  async function runHandedToFrozen(node: TestNode, daemon: DaemonProcess): Promise<string> {
    for (let attempt = 1; ; attempt += 1) {
      daemon.child.kill('SIGSTOP');
      const run = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
      const handed = await waitFor(
        async () =>
          serviceRuns(service.db, node.email).find((row) => row.run_id === run.body.run_id)?.status === 'running' ? true : undefined,
        'the frozen node to be handed the run',
        5_000,
      ).catch(() => false);
      if (handed) return run.body.run_id as string;
      if (attempt === 3) throw new Error('the frozen node was never handed a run');
      await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.body.run_id}/cancel`, { method: 'POST', token: node.token });
      daemon.child.kill('SIGCONT');
    }
  }

  it('a node frozen past the lease of a run its held poll got never starts that agent; it takes the next run when thawed', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'frozen', agents: { [SALES]: 'held' } });
    await register(node, SALES);
    const daemon = DaemonProcess.start(node, FIELD_TIMING);
    await waitUntilServing(service.baseUrl, node, SALES);
    try {
      const frozen = { body: { run_id: await runHandedToFrozen(node, daemon) } };
      // The service gives up on the silent node: the run is failed node_lost and refunded (it is not retry-safe).
      const lost = await ended(node, frozen.body.run_id);
      expect(lost).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'node_lost' } });
      daemon.child.kill('SIGCONT');
      // Thawed, the daemon reads the answer it was handed before the freeze: the lease is gone by its own reckoning.
      await daemon.waitForEvent('run_lost', (event) => event.run_id === frozen.body.run_id, EVENT_MS);
      expect(agentEvents(node, 'start').filter((event) => event.run_id === frozen.body.run_id)).toEqual([]);
      expect(ledgerOf(frozen.body.run_id)).toEqual(['debit', 'refund']);

      releaseAgents(node);
      const next = await executeOverHttp(service.baseUrl, node, SALES, { prefer: 'respond-async' });
      expect(await ended(node, next.body.run_id)).toMatchObject({ status: 'succeeded', charged_cents: 8 });
    } finally {
      daemon.child.kill('SIGCONT');
    }
    expect(await daemon.stop()).toBe(0);
  });

  it('a node whose wall clock is ten minutes behind renews its lease: a run outlives it, reported once', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'skewed', agents: { [OPS]: 'held' } });
    await register(node, OPS);
    // Its wall clock only: the monotonic clock is the host's, as on a host whose clock is simply wrong. One slot: its
    // polls are then heartbeats 15 s apart, and only the run's own renewals keep its 6 s lease.
    const skewed = {
      ...node,
      env: {
        ...node.env,
        SWARM_NODE_CONCURRENCY: '1',
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: '-10m',
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        FAKETIME_DONT_RESET: '1',
      },
    };
    const daemon = DaemonProcess.start(skewed, FIELD_TIMING);
    await waitUntilServing(service.baseUrl, node, OPS);
    const started = await executeOverHttp(service.baseUrl, node, OPS, { prefer: 'respond-async' });
    await agentStartedFor(node, started.body.run_id);
    const claimedAt = Date.now();
    // The agent works past two whole leases (6 s each) after its start; only renewals keep the run.
    await waitFor(
      async () =>
        (await runOf(node, started.body.run_id)).body.status === 'running' && Date.now() > claimedAt + 13_000 ? true : undefined,
      'the run still running two leases after its start',
      EVENT_MS,
    );
    releaseAgents(node);
    expect(await ended(node, started.body.run_id)).toMatchObject({ status: 'succeeded', charged_cents: 4, attempt: 1 });
    expect(await daemon.stop()).toBe(0);
  });
});

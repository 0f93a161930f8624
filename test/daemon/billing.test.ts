// swarm-node daemon billing (issue 6 §1, §2, §3): the built binary against the real svc-api running a slow real
// agent. Insufficient balance pauses without hammering execute and resumes after funding; a daemon killed with
// SIGKILL mid-run is settled by the next one with the same key; SIGTERM lets the run in flight finish; exit 0.
import { describe, expect, it } from 'vitest';
import { fundWallet, waitFor } from '../helpers/funnel.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { cli, DaemonProcess, expectExactlyOnce, localRuns, register, RequestLog, signedInNode, slowAgent, type TestNode } from './support.js';

const OPS = 'agent_ops_monitor_004'; // 4 cents, answers in 0.7 s
const RAG = 'agent_research_rag_015'; // 15 cents, answers in 2.5 s: long enough to catch in flight on a loaded machine

const requests = new RequestLog();
const service = useSvcApi(() => ({ agentCommand: slowAgent(700, { [RAG]: 2_500 }), logger: { level: 'info', stream: requests } }));

function pendingRows(node: TestNode): number {
  return localRuns(node).filter((run) => run.status === 'pending').length;
}

function serviceRunning(node: TestNode): number {
  return service.db.prepare<[string], { n: number }>(`SELECT COUNT(*) AS n FROM runs WHERE user_id = ? AND status = 'running'`).get(node.email)!.n;
}

describe('swarm-node daemon: billing', () => {
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
    expect(status.json.daemon.agents[0]).toMatchObject({ agent_id: OPS, paused_reason: 'insufficient_balance', paused_until: expect.any(String) });
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
    expect(daemon.events('agent_paused').map((event) => event.wallet_login_url)).toEqual([paused.wallet_login_url, paused.wallet_login_url]);
    expect(daemon.output.split(service.walletUrl).length - 1).toBe(2);
    expect(requests.executes(402)).toBe(2);
    expect(requests.executes() - executesBefore).toBe(5 + 2);
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 5, cents: 20 });
    expect(daemon.output).not.toContain(node.token);
  });

  it('SIGKILL mid-run: the next daemon settles the run with its key before anything else; charged once, journaled once', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 500, label: 'sigkill' });
    await register(node, RAG, '--every', '1s');
    const first = DaemonProcess.start(node);
    // The journal shows a run in flight (its row and key are committed) and the service is running the agent.
    await waitFor(async () => (pendingRows(node) === 1 && serviceRunning(node) === 1 ? true : undefined), 'a run in flight', 5_000);
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');
    const [killed] = localRuns(node).filter((run) => run.status === 'pending');
    expect(killed).toBeDefined();

    const second = DaemonProcess.start(node);
    const settled = await second.waitForEvent('pending_runs_settled', (event) => event.settled === '1', 8_000);
    expect(settled).toMatchObject({ expired: '0' });
    const row = localRuns(node).find((run) => run.idempotency_key === killed!.idempotency_key)!;
    expect(row).toMatchObject({ status: 'succeeded', charged_cents: 15, run_id: expect.any(String) });
    expect(second.events('run_settled')).toEqual([
      expect.objectContaining({ agent: RAG, status: 'succeeded', charged_cents: '15', run_id: row.run_id, key: killed!.idempotency_key }),
    ]);
    // One run of an agent at a time: the second daemon started none until the killed one was settled.
    const later = localRuns(node).filter((run) => run.started_at > killed!.started_at);
    for (const run of later) expect(run.started_at).toBeGreaterThanOrEqual(row.finished_at!);

    // SIGTERM with a new run in flight: no new run, the one in flight finishes and is settled, exit 0.
    await waitFor(async () => (pendingRows(node) === 1 ? true : undefined), 'a run in flight', 5_000);
    const inFlight = localRuns(node).find((run) => run.status === 'pending')!;
    const stoppedAt = Date.now();
    expect(await second.stop('SIGTERM')).toBe(0);
    expect(second.events('stopping')).toEqual([expect.objectContaining({ in_flight_runs: '1' })]);
    const finished = localRuns(node).find((run) => run.idempotency_key === inFlight.idempotency_key)!;
    expect(finished).toMatchObject({ status: 'succeeded', charged_cents: 15 });
    expect(finished.finished_at!).toBeGreaterThanOrEqual(stoppedAt);
    expect(localRuns(node).filter((run) => run.started_at >= stoppedAt)).toEqual([]);
    expect(second.events('daemon_stopped')).toEqual([expect.objectContaining({ pending_runs: '0' })]);

    const { runs, cents } = expectExactlyOnce(service.db, node);
    expect(cents).toBe(runs * 15);
  });

  it('SIGTERM past the drain bound exits 0 leaving the run pending; the next start settles it', async () => {
    const node = await signedInNode(service.baseUrl, { fundCents: 100, label: 'drain' });
    await register(node, RAG, '--every', '1h');
    const first = DaemonProcess.start(node, ['--tick-ms', '100', '--backoff-ms', '400', '--drain-ms', '100']);
    await waitFor(async () => (pendingRows(node) === 1 ? true : undefined), 'a run in flight', 5_000);
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.events('daemon_stopped')).toEqual([expect.objectContaining({ level: 'warn', drained: 'false', pending_runs: '1' })]);

    const second = DaemonProcess.start(node);
    await second.waitForEvent('pending_runs_settled', (event) => event.settled === '1', 8_000);
    expect(await second.stop()).toBe(0);
    expect(expectExactlyOnce(service.db, node)).toEqual({ runs: 1, cents: 15 });
  });
});

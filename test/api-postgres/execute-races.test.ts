// Executes of one user while its wallet's row is locked by another transaction (a test's own, here), so that they
// all wait at once for it and meet in the order PostgreSQL lets them through: the races of execute's one statement
// (src/api/runs/execute-statement.ts) and of its share of the pool (src/api/store/execute-slots.ts), made to happen
// every time. Each race ends as if the executes had come one after the other: no cap overspent, one run per key, a
// cap set meanwhile held to, and the node's own calls never left without a connection.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import type { Answer } from '../helpers/protocol-node.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';
import { TEST_RUN_TIMING, execute, paidUserWithNode, runsOf, stopNodes, type PaidUserWithNode } from '../api/execute-fixtures.js';

const MONITOR = 'agent_ops_monitor_004';
const REVIEW = 'agent_dev_review_012';

describe("one user's executes meeting at a locked wallet (PostgreSQL)", () => {
  let service: TestService;
  let url: string;
  beforeAll(async () => {
    const dataDir = tempDir('svc-pg-races-');
    service = await startSvcApi({ dataDir, runTiming: { ...TEST_RUN_TIMING, leaseMs: 30_000 } });
    url = await postgresDatabaseFor(dataDir);
  });
  afterAll(async () => {
    await stopNodes();
    await service?.close();
    removeTempDirs();
  });

  /**
   * Locks the user's wallet row, sends `send()`'s executes, waits until `waiting` of them wait for the lock, runs
   * `meanwhile` in the locking transaction, commits it, and answers what the executes got.
   */
  async function atLockedWallet(
    email: string,
    send: () => Promise<ApiResponse>[],
    waiting: number,
    meanwhile: (locker: pg.Client) => Promise<void> = async () => undefined,
  ): Promise<ApiResponse[]> {
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT balance_cents FROM wallets WHERE user_id = $1 FOR UPDATE', [email]);
      const sent = send();
      await waitFor(async () => {
        // Read afresh each time: inside a transaction the activity is otherwise the snapshot of its first read.
        await locker.query('SELECT pg_stat_clear_snapshot()');
        const { rows } = await locker.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        return rows[0]!.n >= waiting ? true : undefined;
      }, `${waiting} executes waiting for the wallet`);
      await meanwhile(locker);
      await locker.query('COMMIT');
      return await Promise.all(sent);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  }
  const review = (user: PaidUserWithNode, key = randomUUID()) =>
    execute(service, user.token, { user_id: user.email, agent_id: REVIEW, input: CONTRACT_INPUTS[REVIEW] }, key);
  const statuses = (responses: ApiResponse[]) =>
    responses.map((response) => (response.status === 200 ? 'ran' : (response.body.code as string))).sort();

  it('eight executes that each saw room under a cap of five runs: five run, three are refused budget_exceeded, none charged past it', async () => {
    const user = await paidUserWithNode(service, 1000, { agents: [REVIEW] });
    expect(
      (await httpRequest(`${service.baseUrl}/v1/swarm/budgets/all/day`, { method: 'PUT', token: user.token, body: { cap_cents: 60 } }))
        .status,
    ).toBe(200);
    const responses = await atLockedWallet(user.email, () => Array.from({ length: 8 }, () => review(user)), 8);
    expect(statuses(responses)).toEqual(['budget_exceeded', 'budget_exceeded', 'budget_exceeded', 'ran', 'ran', 'ran', 'ran', 'ran']);
    const budgets = await httpRequest(`${service.baseUrl}/v1/swarm/budgets`, { token: user.token });
    expect(budgets.body.budgets).toMatchObject([{ agent_id: null, period: 'day', cap_cents: 60, spent_cents: 60 }]);
    expect(runsOf(service, user.email).reduce((sum, run) => sum + run.charged_cents, 0)).toBe(60);
  });

  it('two executes with one Idempotency-Key, both sent before either ran: one run, charged once, both answered with it', async () => {
    const user = await paidUserWithNode(service, 1000, { agents: [REVIEW] });
    const key = randomUUID();
    const responses = await atLockedWallet(user.email, () => [review(user, key), review(user, key)], 2);
    expect(responses.map((response) => response.status)).toEqual([200, 200]);
    expect(responses[0]!.body.run_id).toBe(responses[1]!.body.run_id);
    expect(runsOf(service, user.email)).toHaveLength(1);
    expect(runsOf(service, user.email)[0]!.charged_cents).toBe(12);
  });

  it('a cap set while an execute waits for the wallet (as PUT sets it) holds for that execute: refused budget_exceeded, nothing charged', async () => {
    const user = await paidUserWithNode(service, 1000, { agents: [REVIEW] });
    const responses = await atLockedWallet(
      user.email,
      () => [review(user)],
      1,
      async (locker) => {
        // What PUT /v1/swarm/budgets/all/day writes (budgets/budget-store.ts), in the transaction that holds the wallet.
        await locker.query('UPDATE wallets SET caps_version = caps_version + 1 WHERE user_id = $1', [user.email]);
        await locker.query(
          `INSERT INTO budgets (user_id, scope, period, cap_cents, created_at, updated_at, spent_cents, period_start) VALUES ($1, '*', 'day', 5, 0, 0, 0, 0)`,
          [user.email],
        );
      },
    );
    expect(statuses(responses)).toEqual(['budget_exceeded']);
    expect(runsOf(service, user.email)).toHaveLength(0);
  });

  it('tells another instance listening of a run queued and of its end, the final answer with the end', async () => {
    const user = await paidUserWithNode(service, 1000, { agents: [REVIEW] });
    // Named as an instance's listening connection is (store/postgres-notifications.ts): the service counts it as one.
    const other = new pg.Client({ connectionString: url, application_name: 'svc-api events a-test-instance' });
    await other.connect();
    // A notification is `<instance> <topic>`, the topics of one turn of the event loop a line each.
    const heard: string[] = [];
    other.on('notification', (message) => heard.push(...(message.payload ?? '').replace(/^\S+ /, '').split('\n')));
    await other.query('LISTEN svc_run_events');
    try {
      // The service looks every second whether another instance listens: runs until one is told, with its answer.
      const told = new Set<string>();
      await waitFor(async () => {
        const ran = await review(user);
        expect(ran.status, ran.text).toBe(200);
        told.add(`run:${ran.body.run_id as string} ${ran.text}`);
        return heard.some((line) => told.has(line)) ? true : undefined;
      }, 'a run and its answer told to the other instance');
      expect(heard).toContain(`work:${user.email}`);
    } finally {
      await other.end();
    }
  });

  it("a node's poll and result find a connection while fifty executes of its user wait for their wallet", async () => {
    const started: AssignedRun[] = [];
    let release!: (answer: Answer) => void;
    const answered = new Promise<Answer>((resolve) => (release = resolve));
    const user = await paidUserWithNode(service, 1000, {
      agents: [MONITOR],
      capacity: 8,
      answer: (run) => {
        started.push(run);
        return started.length === 1 ? answered : { status: 'succeeded', output: {} };
      },
    });
    const body = { user_id: user.email, agent_id: MONITOR };
    const first = execute(service, user.token, body, randomUUID(), { prefer: 'wait=60' });
    await waitFor(async () => (started.length === 1 ? true : undefined), 'the node holding the first run');
    let firstAnswer: ApiResponse | undefined;
    const rest = await atLockedWallet(
      user.email,
      () => Array.from({ length: 50 }, () => execute(service, user.token, body, randomUUID(), { prefer: 'wait=60' })),
      // The executes hold every connection they may; the rest of them wait in the process, holding none.
      8,
      async () => {
        release({ status: 'succeeded', output: { answered: 'while the wallet was locked' } });
        firstAnswer = await first;
      },
    );
    expect(firstAnswer?.status, firstAnswer?.text).toBe(200);
    expect(firstAnswer!.body).toMatchObject({ status: 'succeeded', output: { answered: 'while the wallet was locked' } });
    expect(rest.map((response) => `${response.status} ${response.body.status}`)).toEqual(Array.from({ length: 50 }, () => '200 succeeded'));
    expect(runsOf(service, user.email).filter((run) => run.status === 'succeeded')).toHaveLength(51);
  });
});

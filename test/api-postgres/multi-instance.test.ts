// Several svc-api processes on one PostgreSQL database behave as one service (docs/operations.md
// "svc-api on PostgreSQL: several instances"): concurrent executes and replays of one Idempotency-Key landing on
// different instances never overdraw nor charge twice, one webhook event delivered to both is applied once, and an
// instance killed mid-load (SIGKILL) leaves books that balance exactly.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signWebhookBody } from '../../src/api/payments/webhook-signature.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { spawnSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { syncPostgres, type SyncPostgres } from '../helpers/sync-postgres.js';
import { postgresDatabaseFor } from '../helpers/test-engine.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const PRICE = 4;

describe('two svc-api instances on one PostgreSQL database', () => {
  let url: string;
  let reader: SyncPostgres;
  let db: SqliteDatabase;
  let a: SpawnedSvcApi;
  let b: SpawnedSvcApi;
  const shared = {
    SVC_JWT_SECRET: randomBytes(32).toString('base64url'),
    SVC_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64url')}`,
  };

  beforeAll(async () => {
    url = await postgresDatabaseFor(tempDir('svc-pg-shared-'));
    // Started at once: the second migrates after the first (advisory lock) and finds nothing left to do.
    const started = await Promise.all(
      [0, 1].map(() => spawnSvcApi({ env: { ...shared, SVC_DATABASE_URL: url }, args: ['--lease-seconds', '5'] })),
    );
    [a, b] = [started[0]!, started[1]!];
    reader = syncPostgres(url);
    db = reader.db;
  });
  afterAll(async () => {
    await stopServingNodes();
    await Promise.all([a?.stop(), b?.stop()]);
    await reader?.close();
    removeTempDirs();
  });

  /** A signed-in user funded with `cents`, whose node (polling instance A) serves the agent and answers at once. */
  async function fundedUserWithNode(cents: number): Promise<{ email: string; token: string }> {
    const email = uniqueEmail('multi');
    const token = await signIn(a.baseUrl, email);
    if (cents > 0) await fundWallet(b.baseUrl, email, cents);
    await serve(a.baseUrl, await enrollNode(a.baseUrl, email), { agents: [AGENT], capacity: 8 });
    return { email, token };
  }
  const execute = (baseUrl: string, user: { email: string; token: string }, key = randomUUID()): Promise<ApiResponse> =>
    httpRequest(`${baseUrl}/v1/swarm/execute`, {
      method: 'POST',
      token: user.token,
      headers: { 'idempotency-key': key },
      body: { user_id: user.email, agent_id: AGENT },
    });
  const balanceOf = (email: string): number =>
    (db.prepare('SELECT balance_cents FROM wallets WHERE user_id = ?').get(email) as { balance_cents: number }).balance_cents;
  const entriesOf = (email: string) =>
    db
      .prepare('SELECT kind, amount_cents, run_id, payment_id FROM ledger_entries WHERE user_id = ? ORDER BY entry_id')
      .all(email) as Array<{
      kind: string;
      amount_cents: number;
      run_id: string | null;
      payment_id: string | null;
    }>;
  const runsOf = (email: string) =>
    db.prepare('SELECT run_id, status, charged_cents FROM runs WHERE user_id = ?').all(email) as Array<{
      run_id: string;
      status: string;
      charged_cents: number;
    }>;

  /** The books of one user: every balance is its entries' sum, and every cent charged is a run's. */
  function expectBooksBalance(email: string, fundedCents: number): void {
    const entries = entriesOf(email);
    const sum = entries.reduce((total, entry) => total + (entry.kind === 'debit' ? -entry.amount_cents : entry.amount_cents), 0);
    expect(balanceOf(email)).toBe(sum);
    const runs = runsOf(email);
    const charged = runs.reduce((total, run) => total + run.charged_cents, 0);
    expect(balanceOf(email)).toBe(fundedCents - charged);
    expect(balanceOf(email)).toBeGreaterThanOrEqual(0);
    // One debit per run, at most one refund, and a refund only for a run that failed.
    const debits = entries.filter((entry) => entry.kind === 'debit');
    expect(new Set(debits.map((entry) => entry.run_id)).size).toBe(runs.length);
    expect(debits).toHaveLength(runs.length);
    const refunded = new Set(entries.filter((entry) => entry.kind === 'refund').map((entry) => entry.run_id));
    for (const run of runs) expect(refunded.has(run.run_id)).toBe(run.status === 'failed');
  }

  it('concurrent executes on both instances take exactly what the balance covers, never more', async () => {
    const user = await fundedUserWithNode(10 * PRICE);
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => execute(i % 2 === 0 ? a.baseUrl : b.baseUrl, user)));
    const accepted = responses.filter((response) => response.status === 200 || response.status === 202);
    expect(accepted.length + responses.filter((response) => response.status === 402).length).toBe(30);
    for (const refused of responses.filter((response) => response.status === 402)) expect(refused.body.balance_cents).toBeLessThan(PRICE);
    await waitFor(
      async () => (runsOf(user.email).every((run) => run.status !== 'queued' && run.status !== 'running') ? true : undefined),
      'the runs to finish',
    );
    // Each accepted run took 4 cents; a run the service failed on a loaded machine (node_lost) gave them back, and
    // then one more run could be accepted: the runs still charged are exactly what the funding covers, and never more.
    const charged = runsOf(user.email).filter((run) => run.charged_cents > 0);
    expect(charged.length * PRICE + balanceOf(user.email)).toBe(10 * PRICE);
    expect(accepted.length).toBe(runsOf(user.email).length);
    expectBooksBalance(user.email, 10 * PRICE);
  });

  it('a budget is never overspent by executes landing on both instances at once (docs/api.md "Budgets")', async () => {
    const user = await fundedUserWithNode(100 * PRICE);
    const capped = await httpRequest(`${b.baseUrl}/v1/swarm/budgets/all/day`, {
      method: 'PUT',
      token: user.token,
      body: { cap_cents: 10 * PRICE },
    });
    expect(capped.status, capped.text).toBe(200);
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => execute(i % 2 === 0 ? a.baseUrl : b.baseUrl, user)));
    const refused = responses.filter((response) => response.status === 402);
    for (const response of refused) expect(response.body).toMatchObject({ code: 'budget_exceeded', cap_cents: 10 * PRICE });
    expect(responses.length - refused.length).toBe(runsOf(user.email).length);
    await waitFor(
      async () => (runsOf(user.email).every((run) => run.status !== 'queued' && run.status !== 'running') ? true : undefined),
      'the runs to finish',
    );
    // Charged at most the cap; exactly the cap unless a run failed on a loaded machine and gave its room back.
    const charged = runsOf(user.email).reduce((total, run) => total + run.charged_cents, 0);
    expect(charged).toBeLessThanOrEqual(10 * PRICE);
    expect(runsOf(user.email).length).toBeGreaterThanOrEqual(10);
    expectBooksBalance(user.email, 100 * PRICE);
  });

  it('one Idempotency-Key sent to both instances at once runs once and is charged once', async () => {
    const user = await fundedUserWithNode(10 * PRICE);
    const key = randomUUID();
    const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => execute(i % 2 === 0 ? a.baseUrl : b.baseUrl, user, key)));
    for (const response of responses) expect([200, 202], response.text).toContain(response.status);
    expect(new Set(responses.map((response) => response.body.run_id)).size).toBe(1);
    expect(runsOf(user.email)).toHaveLength(1);
    expect(entriesOf(user.email).filter((entry) => entry.kind === 'debit')).toHaveLength(1);
    await waitFor(async () => (runsOf(user.email)[0]!.status === 'succeeded' ? true : undefined), 'the run to finish');
    // Replayed on either instance: the first final answer, byte for byte.
    const [replayA, replayB] = await Promise.all([execute(a.baseUrl, user, key), execute(b.baseUrl, user, key)]);
    expect(replayA.text).toBe(replayB.text);
    expect(replayA.headers.get('idempotent-replayed')).toBe('true');
    expect(balanceOf(user.email)).toBe(9 * PRICE);
  });

  it('a token signed out on one instance is refused by the other, which had used and remembered it, within its poll of the log', async () => {
    const email = uniqueEmail('revoke');
    const token = await signIn(a.baseUrl, email);
    const walletOn = async (baseUrl: string) => (await httpRequest(`${baseUrl}/v1/swarm/wallet`, { token })).status;
    expect(await walletOn(b.baseUrl)).toBe(200);
    expect((await httpRequest(`${a.baseUrl}/v1/auth/logout`, { method: 'POST', token })).status).toBe(200);
    expect(await walletOn(a.baseUrl)).toBe(401);
    // B polls the revocation log every 400 ms (docs/api.md "Revocation and sessions"); waited for, never timed.
    await waitFor(async () => ((await walletOn(b.baseUrl)) === 401 ? true : undefined), 'instance B to refuse the revoked token');
    const verdict = await httpRequest(`${b.baseUrl}/v1/auth/verify`, { body: { token } });
    expect(verdict.body).toEqual({ valid: false, reason: 'revoked' });
  });

  it('a node that removed itself on one instance is refused 410 by the other, which had remembered its credential, within its poll of the log', async () => {
    const email = uniqueEmail('node-gone');
    await signIn(a.baseUrl, email);
    const node = await enrollNode(a.baseUrl, email);
    const agentsOn = async (baseUrl: string) =>
      (await httpRequest(`${baseUrl}/v1/swarm/nodes/self/agents`, { token: node.credential })).status;
    expect(await agentsOn(b.baseUrl)).toBe(200);
    expect((await httpRequest(`${a.baseUrl}/v1/swarm/nodes/self`, { method: 'DELETE', token: node.credential })).status).toBe(200);
    expect(await agentsOn(a.baseUrl)).toBe(410);
    // B forgets the credential when it reads the removal in the revocation log, every 400 ms; waited for, never timed.
    await waitFor(async () => ((await agentsOn(b.baseUrl)) === 410 ? true : undefined), 'instance B to refuse the removed node');
  });

  it('one webhook event delivered to both instances at once is applied once', async () => {
    const email = uniqueEmail('hook');
    const body = JSON.stringify({
      id: `evt_${randomBytes(8).toString('hex')}`,
      type: 'payment.confirmed',
      created: Math.floor(Date.now() / 1000),
      data: {
        payment_id: `pay_${randomBytes(8).toString('hex')}`,
        status: 'CONFIRMED',
        customer_email: email,
        offer_id: 'svc_pay_wallet_fund',
        merchant_id: 'merchant_local',
        amount_cents: 700,
      },
    });
    const deliver = (baseUrl: string) =>
      httpRequest(`${baseUrl}/v1/payments/webhook`, {
        method: 'POST',
        rawBody: body,
        headers: { 'content-type': 'application/json', 'svc-signature': signWebhookBody(shared.SVC_WEBHOOK_SECRET, body, Date.now()) },
      });
    const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => deliver(i % 2 === 0 ? a.baseUrl : b.baseUrl)));
    for (const response of responses) expect(response.status, response.text).toBe(200);
    expect(responses.filter((response) => response.body.duplicate !== true)).toHaveLength(1);
    expect(balanceOf(email)).toBe(700);
    expect(entriesOf(email)).toHaveLength(1);
  });

  it('an instance killed mid-load (SIGKILL) leaves books that balance exactly; its runs finish through the other', async () => {
    const funded = 200 * PRICE;
    const user = await fundedUserWithNode(funded);
    const victim = await spawnSvcApi({ env: { ...shared, SVC_DATABASE_URL: url }, args: ['--lease-seconds', '5'] });
    const sent: Array<Promise<ApiResponse | undefined>> = [];
    for (let i = 0; i < 60; i += 1) {
      sent.push(execute(i % 2 === 0 ? a.baseUrl : victim.baseUrl, user).catch(() => undefined));
      if (i === 30) victim.process.kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const answered = await Promise.all(sent);
    expect(answered.filter((response) => response?.status === 200 || response?.status === 202).length).toBeGreaterThan(20);
    // Every run the victim accepted is in the database: the node (polling A) takes it, or the sweep refunds it.
    await waitFor(
      async () => (runsOf(user.email).every((run) => run.status === 'succeeded' || run.status === 'failed') ? true : undefined),
      'every accepted run to finish',
      30_000,
    );
    expectBooksBalance(user.email, funded);
  });
});

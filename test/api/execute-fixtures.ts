// A paid user for the execute, wallet and idempotency tests without the HTTP funnel: the service's own token
// service signs the JWT and its own ledger credits a CONFIRMED wallet-fund payment, as the webhook would.
import { randomUUID } from 'node:crypto';
import type { TestService } from '../helpers/svc-api.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes, type ServeOptions, type ServingNode } from '../helpers/protocol-node.js';
import { uniqueEmail } from '../helpers/temp.js';
import { AGENT_IDS } from '../../src/contract/agents.js';
import { mintToken } from '../helpers/tokens.js';

export interface PaidUser {
  email: string;
  token: string;
}

export async function paidUser(service: TestService, balanceCents: number, email = uniqueEmail()): Promise<PaidUser> {
  const { token } = await mintToken(service, email, 'svc_starter_agents');
  if (balanceCents > 0) await credit(service, email, balanceCents);
  return { email, token };
}

/** Timings short enough for a test to watch a lease run out, with room for a loaded machine. */
export const TEST_RUN_TIMING = { leaseMs: 2_000, pollHoldMs: 500, sweepMs: 100, executeWaitMs: 10_000, queueTimeoutMs: 60_000 };

export interface PaidUserWithNode extends PaidUser {
  node: ServingNode;
}

/** A paid user with an enrolled node of theirs that serves every agent (or `options.agents`) and answers as told. */
export async function paidUserWithNode(
  service: TestService,
  balanceCents: number,
  options: Partial<ServeOptions> = {},
): Promise<PaidUserWithNode> {
  const user = await paidUser(service, balanceCents);
  const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: AGENT_IDS, ...options });
  return { ...user, node };
}

/** Stops every node started for the tests of a file (afterAll). */
export const stopNodes = stopServingNodes;

/** A CONFIRMED wallet-fund payment recorded and credited, the way a verified webhook does it. */
export async function credit(service: TestService, email: string, amountCents: number): Promise<void> {
  const paymentId = `pay_${randomUUID()}`;
  const now = Date.now();
  service.db
    .prepare(
      `INSERT INTO payments (payment_id, status, customer_email, offer_id, merchant_id, amount_cents, confirmed_at, recorded_at)
       VALUES (?, 'CONFIRMED', ?, 'svc_pay_wallet_fund', 'merchant_local', ?, ?, ?)`,
    )
    .run(paymentId, email, amountCents, now, now);
  await service.ctx.ledger.creditPayment({ user_id: email, payment_id: paymentId, amount_cents: amountCents });
}

export function execute(
  service: TestService,
  token: string | undefined,
  body: unknown,
  /** null sends no Idempotency-Key header. */
  idempotencyKey: string | null = randomUUID(),
  extraHeaders: Record<string, string> = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...extraHeaders };
  if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
  return httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    body,
    headers,
    ...(token === undefined ? {} : { token }),
  });
}

/** Everything execute can change, to assert that a refused request changed nothing. */
export function ledgerSnapshot(service: TestService): Record<string, unknown> {
  const db = service.db;
  return {
    runs: db.prepare('SELECT * FROM runs ORDER BY run_id').all(),
    entries: db.prepare('SELECT * FROM ledger_entries ORDER BY entry_id').all(),
    wallets: db.prepare('SELECT user_id, balance_cents FROM wallets ORDER BY user_id').all(),
    keys: db.prepare('SELECT * FROM idempotency_keys ORDER BY user_id, idempotency_key').all(),
  };
}

export function runsOf(
  service: TestService,
  email: string,
): Array<{ run_id: string; status: string; charged_cents: number; agent_id: string }> {
  return service.db
    .prepare('SELECT run_id, status, charged_cents, agent_id FROM runs WHERE user_id = ? ORDER BY started_at')
    .all(email) as never;
}

export function entriesOf(service: TestService, email: string): Array<{ kind: string; amount_cents: number; run_id: string | null }> {
  return service.db
    .prepare('SELECT kind, amount_cents, run_id FROM ledger_entries WHERE user_id = ? ORDER BY entry_id')
    .all(email) as never;
}

// A node's result as one statement on PostgreSQL (docs/api.md "Storage"): the run finished, its refund when it
// failed (the wallet, the ledger entry, the budget counters of its period), the final answer stored on its
// Idempotency-Key and its webhook events, in one round trip, one implicit transaction, prepared once per connection.
// The statement goes by the run as the service last saw it (handed to the node by a poll here, or read just before):
// it finishes the run only if the row still is that (its status, node, lease, attempt, cancel and charge), so every
// decision taken from it in advance (refund or not, cancelled or not, the answer's fields) still holds when it
// commits. Any other row, nothing is written and the finisher goes the long way (finish-run.ts: a transaction on the
// locked row).
//
// The final answer is runView's JSON, byte for byte as the long way stores it; only the balance is the statement's,
// spliced in where the view has it. Locks: the run's row, then the wallet's, then the budget rows (the order of
// budgets/budget-store.ts).
import { sql } from 'kysely';
import { eventBit } from '../../contract/webhooks.js';
import { compiledOnce, rawStatement } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import { EVERY_AGENT } from '../budgets/budget-store.js';
import type { RunRow } from './run-store.js';

export interface OneStatementFinish {
  /** The run as the service last saw it: the statement changes it only if it still is. */
  was: RunRow;
  /** The run as it ends. */
  finished: RunRow;
  /** Its charge given back (a failure), or 0. */
  refundCents: number;
  /** The final answer around its balance: `${before}${balance_cents}${after}` (answerAroundBalance). */
  answer: { before: string; after: string };
  /** The event its end is (webhooks/outbox.ts), its id and payload. */
  event: { type: string; id: string; payload: string };
}

/** The final answer; undefined: the run is not as it was seen, nothing written (go the long way). */
export type FinishStatement = (finish: OneStatementFinish) => Promise<string | undefined>;

/** The answer's JSON split where its balance goes: what the statement learns last. */
export function answerAroundBalance(json: string, balanceCents: number): { before: string; after: string } {
  // runView puts balance_cents before `output`, the only field that may hold arbitrary JSON, and after fields that
  // are ids, a status and a number: its first occurrence is the top-level one.
  const field = `"balance_cents":${balanceCents}`;
  const at = json.indexOf(field);
  if (at < 0) throw new Error('the run view has no balance_cents');
  return { before: json.slice(0, at + field.length - String(balanceCents).length), after: json.slice(at + field.length) };
}

interface Values {
  runId: string;
  userId: string;
  agentId: string;
  status: string;
  chargedCents: number;
  outputJson: string;
  by: string;
  now: number;
  cancelledAt: number | null;
  wasStatus: string;
  wasNode: string | null;
  wasLease: string | null;
  wasAttempt: number;
  wasCancelAsked: number | null;
  wasCharged: number;
  startedAt: number;
  refundCents: number;
  before: string;
  after: string;
  eventId: string;
  eventType: string;
  payload: string;
  bit: number;
}

export function createFinishStatement(store: Store): FinishStatement {
  const statement = compiledOnce((db, v: Values) => {
    const now = sql`cast(${v.now} as bigint)`;
    const refund = sql`cast(${v.refundCents} as bigint)`;
    return rawStatement(
      db,
      sql<{ answer: string | null }>`
WITH ended AS (
  UPDATE runs SET status = cast(${v.status} as text), charged_cents = cast(${v.chargedCents} as bigint), output_json = cast(${v.outputJson} as text),
    finished_by = cast(${v.by} as text), finished_at = ${now}, lease_expires_at = NULL, cancelled_at = cast(${v.cancelledAt} as bigint)
  WHERE run_id = ${v.runId} AND status = cast(${v.wasStatus} as text) AND node_id IS NOT DISTINCT FROM cast(${v.wasNode} as text)
    AND lease_id IS NOT DISTINCT FROM cast(${v.wasLease} as text) AND attempt = cast(${v.wasAttempt} as integer)
    AND cancel_requested_at IS NOT DISTINCT FROM cast(${v.wasCancelAsked} as bigint) AND charged_cents = cast(${v.wasCharged} as bigint)
  RETURNING run_id
),
refunded AS (
  UPDATE wallets SET balance_cents = balance_cents + ${refund}, updated_at = ${now}
  WHERE user_id = ${v.userId} AND ${refund} > 0 AND EXISTS (SELECT 1 FROM ended)
  RETURNING balance_cents
),
uncounted AS (
  UPDATE budgets SET spent_cents = CASE WHEN spent_cents > ${refund} THEN spent_cents - ${refund} ELSE 0 END
  FROM refunded WHERE budgets.user_id = ${v.userId} AND budgets.scope IN (${EVERY_AGENT}, ${v.agentId}) AND budgets.period_start <= cast(${v.startedAt} as bigint)
),
entry AS (
  INSERT INTO ledger_entries (user_id, kind, amount_cents, payment_id, run_id, created_at)
  SELECT ${v.userId}, 'refund', ${refund}, NULL, ${v.runId}, ${now} FROM refunded
),
answered AS (
  SELECT ${v.before} || coalesce((SELECT balance_cents FROM refunded), (SELECT balance_cents FROM wallets WHERE user_id = ${v.userId}), 0) || ${v.after} AS answer
  WHERE EXISTS (SELECT 1 FROM ended)
),
kept AS (
  UPDATE idempotency_keys SET state = 'done', status_code = 200, response_json = (SELECT answer FROM answered)
  WHERE run_id = ${v.runId} AND EXISTS (SELECT 1 FROM ended)
),
told AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, run_id, event_type, payload_json, created_at, status, next_attempt_at)
  SELECT cast(${v.eventId} as text), e.endpoint_id, e.user_id, cast(${v.runId} as text), cast(${v.eventType} as text), cast(${v.payload} as text), ${now}, 'pending', ${now}
  FROM webhook_endpoints e WHERE e.user_id = ${v.userId} AND (e.event_mask & cast(${v.bit} as integer)) <> 0 AND EXISTS (SELECT 1 FROM ended)
)
SELECT (SELECT answer FROM answered) AS answer`,
    );
  });

  return async ({ was, finished, refundCents, answer, event }) => {
    const [row] = (
      await statement(store.db, {
        runId: was.run_id,
        userId: was.user_id,
        agentId: was.agent_id,
        status: finished.status,
        chargedCents: finished.charged_cents,
        outputJson: finished.output_json!,
        by: finished.finished_by!,
        now: finished.finished_at!,
        cancelledAt: finished.cancelled_at,
        wasStatus: was.status,
        wasNode: was.node_id,
        wasLease: was.lease_id,
        wasAttempt: was.attempt,
        wasCancelAsked: was.cancel_requested_at,
        wasCharged: was.charged_cents,
        startedAt: was.started_at,
        refundCents,
        before: answer.before,
        after: answer.after,
        eventId: event.id,
        eventType: event.type,
        payload: event.payload,
        bit: eventBit(event.type as Parameters<typeof eventBit>[0]),
      })
    ).rows;
    return row?.answer ?? undefined;
  };
}

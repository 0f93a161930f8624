// The money work of an execute as one statement on PostgreSQL (docs/api.md "Storage"): data-
// modifying CTEs that take the run's price from the wallet only when the balance covers it (the same UPDATE, so no
// overdraft), count it against the user's caps, write its ledger entry, queue the run with its labels, claim its
// Idempotency-Key and write its `queued` webhook events, all in one round trip, one implicit transaction, prepared
// once per connection (store/named-statements.ts). Every write hangs on the debit's row: when the debit does not
// happen, nothing does.
//
// The debit happens only on the common path: a key never seen, a node that can take the run, the version checked
// still the current one, no cap in the way, and the caps unchanged since they were read. Anything else declines,
// with nothing written, and execute goes the long way (start-run.ts: one transaction that names the exact refusal,
// replays, takes over an expired key). So do two races, each rolling the statement back whole with an error: a
// second request with the same key whose row committed first (unique_violation on the key), and another run of the
// user counted against a cap first, past which this one's counter would be NULL, which the column refuses
// (not_null_violation; checked on the row as it stands after the lock, as any UPDATE's condition is).
//
// Locks: the wallet row, then the budget rows, as everywhere (budgets/budget-store.ts).
import { sql, type RawBuilder } from 'kysely';
import { periodStart } from '../../contract/budgets.js';
import { eventBit } from '../../contract/webhooks.js';
import { mayStillTakeRuns } from '../nodes/ephemeral.js';
import { compiledOnce, rawStatement } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import { EVERY_AGENT } from '../budgets/budget-store.js';
import type { NewRun } from './run-store.js';

export interface OneStatementStart {
  run: NewRun;
  /** Normalised; [] for none. */
  labels: readonly string[];
  key: string;
  requestHash: string;
  /** The run may wait for a node that is offline now (queue_seconds > 0). */
  mayWait: boolean;
  /** A node seen since then is online. */
  onlineSince: number;
  /** The `queued` event's id and payload (webhooks/outbox.ts). */
  event: { id: string; payload: string };
}

/** The balance after the debit; undefined: declined or lost a race, nothing written (go the long way). */
export type ExecuteStatement = (start: OneStatementStart) => Promise<number | undefined>;

/** unique_violation, not_null_violation: the two races above. */
const RACES = new Set(['23505', '23502']);

interface Values {
  userId: string;
  agentId: string;
  runId: string;
  key: string;
  requestHash: string;
  priceCents: number;
  now: number;
  day: number;
  month: number;
  mayWait: boolean;
  onlineSince: number;
  pinned: string | null;
  digest: string | null;
  labels: readonly string[];
  inputJson: string | null;
  timeoutSeconds: number;
  queueSeconds: number;
  queueDeadlineAt: number;
  retrySafe: number;
  trigger: string | null;
  eventId: string;
  payload: string;
  bit: number;
}

export function createExecuteStatement(store: Store): ExecuteStatement {
  const statement = compiledOnce((db, v: Values) => {
    const price = sql`cast(${v.priceCents} as bigint)`;
    const now = sql`cast(${v.now} as bigint)`;
    /** The start of the period a budget row counts now. */
    const period = (row: string): RawBuilder<number> =>
      sql`(CASE WHEN ${sql.ref(`${row}.period`)} = 'day' THEN cast(${v.day} as bigint) ELSE cast(${v.month} as bigint) END)`;
    /** What the budget row says is spent now: its counter, or 0 when it counts a period gone by. */
    const spent = (row: string): RawBuilder<number> =>
      sql`(CASE WHEN ${sql.ref(`${row}.period_start`)} = ${period(row)} THEN ${sql.ref(`${row}.spent_cents`)} ELSE 0 END)`;
    return rawStatement(
      db,
      sql<{ balance_cents: number | null }>`
WITH gate AS (
  SELECT
    NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.user_id = ${v.userId} AND k.idempotency_key = ${v.key})
    AND EXISTS (
      SELECT 1 FROM nodes n JOIN node_agents a ON a.node_id = n.node_id
      WHERE n.user_id = ${v.userId} AND a.agent_id = ${v.agentId} AND n.removed_at IS NULL AND ${mayStillTakeRuns('n')}
        AND (cast(${v.mayWait} as boolean) OR (n.last_seen_at >= cast(${v.onlineSince} as bigint) AND n.offline_at IS NULL AND n.drained_at IS NULL))
        AND (cast(${v.pinned} as text) IS NULL OR n.node_id = cast(${v.pinned} as text))
        AND (SELECT count(*) FROM node_labels l WHERE l.node_id = n.node_id AND l.label = ANY(cast(${v.labels} as text[]))) = cardinality(cast(${v.labels} as text[])))
    AND (SELECT c.digest FROM agent_current c WHERE c.user_id = ${v.userId} AND c.agent_id = ${v.agentId}) IS NOT DISTINCT FROM cast(${v.digest} as text)
    AND NOT EXISTS (
      SELECT 1 FROM budgets b WHERE b.user_id = ${v.userId} AND b.scope IN (${EVERY_AGENT}, ${v.agentId}) AND ${spent('b')} + ${price} > b.cap_cents)
    AS open,
    (SELECT w.caps_version FROM wallets w WHERE w.user_id = ${v.userId}) AS caps_version
),
debit AS (
  UPDATE wallets SET balance_cents = balance_cents - ${price}, updated_at = ${now}
  WHERE user_id = ${v.userId} AND balance_cents >= ${price} AND caps_version = (SELECT caps_version FROM gate) AND (SELECT open FROM gate)
  RETURNING balance_cents
),
counted AS (
  UPDATE budgets b SET spent_cents = CASE WHEN ${spent('b')} + ${price} <= b.cap_cents THEN ${spent('b')} + ${price} END, period_start = ${period('b')}
  FROM debit WHERE b.user_id = ${v.userId} AND b.scope IN (${EVERY_AGENT}, ${v.agentId})
),
entry AS (
  INSERT INTO ledger_entries (user_id, kind, amount_cents, payment_id, run_id, created_at)
  SELECT ${v.userId}, 'debit', ${price}, NULL, ${v.runId}, ${now} FROM debit
),
queued AS (
  INSERT INTO runs (run_id, user_id, agent_id, charged_cents, input_json, pinned_node_id, bundle_digest, started_at, status, node_id, lease_id,
    lease_expires_at, claimed_at, timeout_seconds, queue_seconds, queue_deadline_at, retry_safe, attempt, "trigger")
  SELECT ${v.runId}, ${v.userId}, ${v.agentId}, ${price}, cast(${v.inputJson} as text), cast(${v.pinned} as text), cast(${v.digest} as text), ${now},
    'queued', NULL, NULL, NULL, NULL, cast(${v.timeoutSeconds} as integer), cast(${v.queueSeconds} as integer), cast(${v.queueDeadlineAt} as bigint),
    cast(${v.retrySafe} as integer), 1, cast(${v.trigger} as text)
  FROM debit
),
labelled AS (
  INSERT INTO run_labels (run_id, label) SELECT ${v.runId}, unnest(cast(${v.labels} as text[])) FROM debit
),
keyed AS (
  INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, state, status_code, response_json, run_id, created_at)
  SELECT ${v.userId}, ${v.key}, ${v.requestHash}, 'in_progress', NULL, NULL, ${v.runId}, ${now} FROM debit
),
told AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, user_id, run_id, event_type, payload_json, created_at, status, next_attempt_at)
  SELECT cast(${v.eventId} as text), e.endpoint_id, e.user_id, cast(${v.runId} as text), 'queued', cast(${v.payload} as text), ${now}, 'pending', ${now}
  FROM webhook_endpoints e WHERE e.user_id = ${v.userId} AND (e.event_mask & cast(${v.bit} as integer)) <> 0 AND EXISTS (SELECT 1 FROM debit)
)
SELECT (SELECT balance_cents FROM debit) AS balance_cents`,
    );
  });

  return async ({ run, labels, key, requestHash, mayWait, onlineSince, event }) => {
    const values: Values = {
      userId: run.user_id,
      agentId: run.agent_id,
      runId: run.run_id,
      key,
      requestHash,
      priceCents: run.charged_cents,
      now: run.started_at,
      day: periodStart('day', run.started_at),
      month: periodStart('month', run.started_at),
      mayWait,
      onlineSince,
      pinned: run.pinned_node_id,
      digest: run.bundle_digest,
      labels,
      inputJson: run.input_json,
      timeoutSeconds: run.timeout_seconds,
      queueSeconds: run.queue_seconds,
      queueDeadlineAt: run.queue_deadline_at,
      retrySafe: run.retry_safe,
      trigger: run.trigger,
      eventId: event.id,
      payload: event.payload,
      bit: eventBit('queued'),
    };
    try {
      const [row] = (await statement(store.db, values)).rows;
      return row?.balance_cents ?? undefined;
    } catch (error) {
      if (RACES.has((error as { code?: unknown }).code as string)) return undefined;
      throw error;
    }
  };
}

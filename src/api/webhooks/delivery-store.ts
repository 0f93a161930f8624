// The outbox's rows as deliveries (docs/api.md "Webhooks"): which are due, an attempt taken and its answer
// recorded, a re-send, and what the user reads of them. An attempt is claimed by moving the delivery's next attempt
// past the attempt's own bound first, under a guard on the row as it was read, so two instances on one database
// never send the same attempt.
import {
  WEBHOOK_ATTEMPT_TIMEOUT_MS,
  WEBHOOK_DELIVERY_RETENTION_DAYS,
  WEBHOOK_MAX_TRIES,
  WEBHOOK_RETRY_DELAYS_SECONDS,
  type WebhookAttempt,
  type WebhookDelivery,
} from '../../contract/webhooks.js';
import { DAY_MS, isoTime } from '../../lib/clock.js';
import type { Selectable } from 'kysely';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';
import type { AttemptResult } from './deliver.js';

export type DeliveryRow = Selectable<Tables['webhook_deliveries']>;

/** A claimed attempt is not claimed again before this: its own bound and a margin. */
const CLAIM_MS = WEBHOOK_ATTEMPT_TIMEOUT_MS + 20_000;

export interface DeliveryStore {
  /** Up to `limit` deliveries due at `now`, each claimed for one attempt (attempts and tries counted). */
  claimDue(now: number, limit: number): Promise<DeliveryRow[]>;
  /** The attempt's answer, and what comes next: delivered, another try after the backoff, or failed. */
  recordAttempt(row: DeliveryRow, result: AttemptResult, at: number): Promise<void>;
  list(endpointId: string, options: { limit: number; before?: string }): Promise<WebhookDelivery[]>;
  find(
    endpointId: string,
    eventId: string,
  ): Promise<{ delivery: WebhookDelivery; payload: unknown; attempts: WebhookAttempt[] } | undefined>;
  /** Sends it again now, a new series of tries; false when there is no such delivery. */
  resend(endpointId: string, eventId: string, now: number): Promise<boolean>;
  /** Removes deliveries older than the retention. */
  purge(now: number): Promise<number>;
}

export function deliveryView(row: DeliveryRow): WebhookDelivery {
  const time = (ms: number | null): string | null => (ms === null ? null : isoTime(ms));
  return {
    event_id: row.event_id,
    endpoint_id: row.endpoint_id,
    event_type: row.event_type,
    // A schedule's event keeps '' in run_id, a column made NOT NULL before schedules had events.
    run_id: row.schedule_id === null ? row.run_id : null,
    schedule_id: row.schedule_id,
    status: row.status,
    attempts: row.attempts,
    created_at: isoTime(row.created_at),
    last_attempt_at: time(row.last_attempt_at),
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' ? time(row.next_attempt_at) : null,
    delivered_at: time(row.delivered_at),
  };
}

export function createDeliveryStore(store: Store): DeliveryStore {
  return {
    async claimDue(now, limit) {
      const due = await store.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute();
      const claimed: DeliveryRow[] = [];
      for (const row of due) {
        const taken = await store.db
          .updateTable('webhook_deliveries')
          .set({ attempts: row.attempts + 1, tries: row.tries + 1, next_attempt_at: now + CLAIM_MS, last_attempt_at: now })
          .where('event_id', '=', row.event_id)
          .where('endpoint_id', '=', row.endpoint_id)
          .where('status', '=', 'pending')
          .where('attempts', '=', row.attempts)
          .where('next_attempt_at', '=', row.next_attempt_at)
          .executeTakeFirst();
        if (Number(taken.numUpdatedRows) === 1)
          claimed.push({ ...row, attempts: row.attempts + 1, tries: row.tries + 1, next_attempt_at: now + CLAIM_MS, last_attempt_at: now });
      }
      return claimed;
    },

    async recordAttempt(row, result, at) {
      await store.transaction(async () => {
        await store.db
          .insertInto('webhook_attempts')
          .values({
            event_id: row.event_id,
            endpoint_id: row.endpoint_id,
            attempt: row.attempts,
            at,
            status_code: result.status_code,
            error: result.error,
            response_excerpt: result.response_excerpt,
            duration_ms: result.duration_ms,
          })
          .onConflict((conflict) => conflict.columns(['event_id', 'endpoint_id', 'attempt']).doNothing())
          .execute();
        const finishedAt = at + result.duration_ms;
        const next = result.delivered
          ? { status: 'delivered' as const, delivered_at: finishedAt, next_attempt_at: null }
          : row.tries >= WEBHOOK_MAX_TRIES
            ? { status: 'failed' as const, next_attempt_at: null }
            : { status: 'pending' as const, next_attempt_at: finishedAt + WEBHOOK_RETRY_DELAYS_SECONDS[row.tries - 1]! * 1000 };
        // Only the latest attempt settles it: an older one answering late (a re-send claimed it meanwhile) is recorded only.
        await store.db
          .updateTable('webhook_deliveries')
          .set({ ...next, last_status_code: result.status_code, last_error: result.error })
          .where('event_id', '=', row.event_id)
          .where('endpoint_id', '=', row.endpoint_id)
          .where('attempts', '=', row.attempts)
          .execute();
      });
    },

    async list(endpointId, { limit, before }) {
      let query = store.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
      if (before !== undefined) query = query.where('event_id', '<', before);
      return (await query.orderBy('event_id', 'desc').limit(limit).execute()).map(deliveryView);
    },

    async find(endpointId, eventId) {
      const row = await store.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('event_id', '=', eventId)
        .executeTakeFirst();
      if (row === undefined) return undefined;
      const attempts = await store.db
        .selectFrom('webhook_attempts')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('event_id', '=', eventId)
        .orderBy('attempt')
        .execute();
      return {
        delivery: deliveryView(row),
        payload: JSON.parse(row.payload_json) as unknown,
        attempts: attempts.map((attempt) => ({
          attempt: attempt.attempt,
          at: isoTime(attempt.at),
          status_code: attempt.status_code,
          error: attempt.error,
          response_excerpt: attempt.response_excerpt,
          duration_ms: attempt.duration_ms,
        })),
      };
    },

    async resend(endpointId, eventId, now) {
      // The attempts so far stay (the next is numbered after them); the backoff starts again.
      const updated = await store.db
        .updateTable('webhook_deliveries')
        .set({ status: 'pending', tries: 0, next_attempt_at: now })
        .where('endpoint_id', '=', endpointId)
        .where('event_id', '=', eventId)
        .executeTakeFirst();
      return Number(updated.numUpdatedRows) === 1;
    },

    async purge(now) {
      const before = now - WEBHOOK_DELIVERY_RETENTION_DAYS * DAY_MS;
      const old = store.db.selectFrom('webhook_deliveries').select('event_id').where('created_at', '<', before);
      await store.db.deleteFrom('webhook_attempts').where('event_id', 'in', old).execute();
      const removed = await store.db.deleteFrom('webhook_deliveries').where('created_at', '<', before).executeTakeFirst();
      return Number(removed.numDeletedRows);
    },
  };
}

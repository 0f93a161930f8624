// The transactional outbox of run events (docs/api.md "Webhooks"): each state change of a run (queued, started, and
// its end) writes its event for the user's endpoints that take it, in the transaction of the change, so an event is
// sent if and only if the change committed. One statement, whatever the number of endpoints, and none written for a
// user who has none. The delivery worker (delivery-worker.ts) sends them; a run never waits for a receiver.
import { sql, type Kysely } from 'kysely';
import { eventBit, type RunEventPayload, type RunWebhookEvent } from '../../contract/webhooks.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { RunRow } from '../runs/run-store.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export interface RunEventOutbox {
  /** Records the event the run's state stands for; call inside the transaction that changed it. */
  record(run: RunRow): Promise<void>;
}

/** Which event a run's state is: a cancelled run is stored failed with cancelled_at (jobs-migration.ts). */
export function eventOf(run: Pick<RunRow, 'status' | 'cancelled_at'>): RunWebhookEvent {
  if (run.status === 'queued') return 'queued';
  if (run.status === 'running') return 'started';
  if (run.status === 'succeeded') return 'succeeded';
  return run.cancelled_at === null ? 'failed' : 'cancelled';
}

export function payloadOf(run: RunRow, event: RunWebhookEvent, eventId: string, now: number): RunEventPayload {
  let error: { code: string; message: string } | null = null;
  if (run.status === 'failed') {
    const output = JSON.parse(run.output_json ?? 'null') as { error?: unknown; message?: unknown } | null;
    error = {
      code: typeof output?.error === 'string' ? output.error : 'failed',
      message: typeof output?.message === 'string' ? output.message : '',
    };
  }
  return {
    id: eventId,
    type: `run.${event}`,
    created: Math.floor(now / 1000),
    data: {
      run: {
        run_id: run.run_id,
        agent_id: run.agent_id,
        status: event === 'cancelled' ? 'cancelled' : run.status,
        attempt: run.attempt,
        charged_cents: run.charged_cents,
        node_id: run.node_id,
        started_at: isoTime(run.started_at),
        finished_at: run.finished_at === null ? null : isoTime(run.finished_at),
        error,
      },
    },
  };
}

/** One event's deliveries, a row for each of the user's endpoints that take it (the bit of its type). */
export interface OutboxRow {
  eventId: string;
  userId: string;
  /** The run of a run event; '' for a schedule's (the column is NOT NULL). */
  runId: string;
  /** The schedule of a schedule event; null for a run's. */
  scheduleId: string | null;
  eventType: string;
  bit: number;
  payload: string;
  now: number;
}

/**
 * The insert of an event's deliveries: one statement, whatever the number of endpoints, and none written for a user
 * who has none. The casts: PostgreSQL types a bare parameter in a SELECT list as text, which a bigint column refuses.
 */
export function deliveriesOf(db: Kysely<Tables>, row: OutboxRow) {
  return db
    .insertInto('webhook_deliveries')
    .columns([
      'event_id',
      'endpoint_id',
      'user_id',
      'run_id',
      'schedule_id',
      'event_type',
      'payload_json',
      'created_at',
      'status',
      'next_attempt_at',
    ])
    .expression(
      db
        .selectFrom('webhook_endpoints')
        .select([
          sql<string>`cast(${row.eventId} as text)`.as('event_id'),
          'endpoint_id',
          'user_id',
          sql<string>`cast(${row.runId} as text)`.as('run_id'),
          sql<string | null>`cast(${row.scheduleId} as text)`.as('schedule_id'),
          sql<string>`cast(${row.eventType} as text)`.as('event_type'),
          sql<string>`cast(${row.payload} as text)`.as('payload_json'),
          sql<number>`cast(${row.now} as bigint)`.as('created_at'),
          sql<'pending'>`'pending'`.as('status'),
          sql<number>`cast(${row.now} as bigint)`.as('next_attempt_at'),
        ])
        .where('user_id', '=', row.userId)
        .where(sql`(event_mask & cast(${row.bit} as integer))`, '<>', 0),
    );
}

export function createRunEventOutbox(store: Store, clock: Clock): RunEventOutbox {
  const insert = compiledOnce(deliveriesOf);
  return {
    async record(run) {
      const now = clock.now();
      const event = eventOf(run);
      const eventId = timeOrderedId(now);
      const payload = JSON.stringify(payloadOf(run, event, eventId, now));
      await insert(store.db, {
        eventId,
        userId: run.user_id,
        runId: run.run_id,
        scheduleId: null,
        eventType: event,
        bit: eventBit(event),
        payload,
        now,
      });
    },
  };
}

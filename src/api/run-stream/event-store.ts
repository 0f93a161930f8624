// The tables of runs' events (docs/api.md "Run events"; store/run-events-migration.ts): every statement on them.
import type { RunEventServed, RunEventType } from '../../contract/run-events.js';
import { isoTime } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export type EventStreamState = Tables['run_event_streams'];
export type EventEntryRow = Tables['run_event_entries'];

export interface EventStore {
  /** The run's row, made when it has none, locked until the transaction ends (PostgreSQL). */
  stateForUpdate(runId: string): Promise<EventStreamState>;
  state(runId: string): Promise<EventStreamState | undefined>;
  /** Which of the seqs from `from` to `to` are stored already. */
  storedSeqs(runId: string, from: number, to: number): Promise<Set<number>>;
  insert(rows: EventEntryRow[]): Promise<void>;
  update(runId: string, change: Omit<EventStreamState, 'run_id'>): Promise<void>;
  /** Up to `limit` events after `after`, in order. */
  page(runId: string, after: number, limit: number): Promise<RunEventServed[]>;
  /** Removes the events of up to `limit` runs that ended before `endedBefore`; their run ids. */
  expire(endedBefore: number, limit: number): Promise<string[]>;
  /** Where a follower stands: the run's status and its last event's seq. */
  position(runId: string): Promise<{ status: Tables['runs']['status']; lastSeq: number } | undefined>;
}

export function createEventStore(store: Store): EventStore {
  const stateOf = (runId: string): Promise<EventStreamState | undefined> =>
    store.db.selectFrom('run_event_streams').selectAll().where('run_id', '=', runId).executeTakeFirst();
  return {
    async stateForUpdate(runId) {
      await store.db
        .insertInto('run_event_streams')
        .values({ run_id: runId, stored_events: 0, stored_bytes: 0, last_seq: -1, truncated: 0 })
        .onConflict((oc) => oc.column('run_id').doNothing())
        .execute();
      return store.forUpdate(store.db.selectFrom('run_event_streams').selectAll().where('run_id', '=', runId)).executeTakeFirstOrThrow();
    },
    state: stateOf,
    async storedSeqs(runId, from, to) {
      const rows = await store.db
        .selectFrom('run_event_entries')
        .select('seq')
        .where('run_id', '=', runId)
        .where('seq', '>=', from)
        .where('seq', '<=', to)
        .execute();
      return new Set(rows.map((row) => row.seq));
    },
    async insert(rows) {
      // 500 rows of 7 values at most (a batch): within both engines' bound on a statement's parameters.
      if (rows.length > 0)
        await store.db
          .insertInto('run_event_entries')
          .values(rows)
          .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
          .execute();
    },
    async update(runId, change) {
      await store.db.updateTable('run_event_streams').set(change).where('run_id', '=', runId).execute();
    },
    async page(runId, after, limit) {
      const rows = await store.db
        .selectFrom('run_event_entries')
        .selectAll()
        .where('run_id', '=', runId)
        .where('seq', '>', after)
        .orderBy('seq')
        .limit(limit)
        .execute();
      return rows.map((row) => ({
        seq: row.seq,
        attempt: row.attempt,
        type: row.type as RunEventType,
        name: row.name,
        at: isoTime(Number(row.at)),
        data: JSON.parse(row.data_json) as unknown,
      }));
    },
    async expire(endedBefore, limit) {
      const due = await store.db
        .selectFrom('run_event_streams as e')
        .innerJoin('runs as r', 'r.run_id', 'e.run_id')
        .select('e.run_id')
        .where('r.finished_at', '<', endedBefore)
        .limit(limit)
        .execute();
      const runIds = due.map((row) => row.run_id);
      if (runIds.length === 0) return [];
      await store.transaction(async () => {
        await store.db.deleteFrom('run_event_entries').where('run_id', 'in', runIds).execute();
        await store.db.deleteFrom('run_event_streams').where('run_id', 'in', runIds).execute();
      });
      return runIds;
    },
    async position(runId) {
      const row = await store.db
        .selectFrom('runs as r')
        .leftJoin('run_event_streams as e', 'e.run_id', 'r.run_id')
        .select(['r.status', 'e.last_seq'])
        .where('r.run_id', '=', runId)
        .executeTakeFirst();
      return row === undefined ? undefined : { status: row.status, lastSeq: row.last_seq ?? -1 };
    },
  };
}

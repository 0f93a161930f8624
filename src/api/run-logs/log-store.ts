// The tables of runs' logs (docs/api.md "Run logs"; store/logs-migration.ts): every statement on them.
import { sql } from 'kysely';
import type { LogEntry } from '../../contract/jobs.js';
import { isoTime } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export type LogState = Tables['run_logs'];
type EntryRow = Tables['run_log_entries'];

/** Where a follower stands: the run's status and the last seq of its log. */
export interface LogPosition {
  status: Tables['runs']['status'];
  lastSeq: number;
}

/** A page of a log as a reader sees it: no entry of a log that has expired. */
export interface LogRead {
  entries: LogEntry[];
  truncated: boolean;
  expired: boolean;
}

export interface LogStore {
  /** The run's log row, made when it has none, locked until the transaction ends (PostgreSQL). */
  stateForUpdate(runId: string): Promise<LogState>;
  state(runId: string): Promise<LogState | undefined>;
  /** Which of the seqs from `from` to `to` are stored already. */
  storedSeqs(runId: string, from: number, to: number): Promise<Set<number>>;
  insert(rows: EntryRow[]): Promise<void>;
  update(runId: string, change: Pick<LogState, 'stored_bytes' | 'last_seq' | 'truncated'>): Promise<void>;
  /** Up to `limit` entries after `after`, in order. */
  page(runId: string, after: number, limit: number): Promise<LogEntry[]>;
  /** `page` with the log's state, read after it so that an expired log shows no entry (see read below). */
  read(runId: string, after: number, limit: number): Promise<LogRead>;
  position(runId: string): Promise<LogPosition | undefined>;
  /** Copies their run's end onto the logs whose run ended since the last call. */
  markEnded(): Promise<void>;
  /** Removes the entries of up to `limit` logs whose run ended before `endedBefore`; the run ids. */
  expire(endedBefore: number, now: number, limit: number): Promise<string[]>;
}

export function createLogStore(store: Store): LogStore {
  const stateOf = (runId: string): Promise<LogState | undefined> =>
    store.db.selectFrom('run_logs').selectAll().where('run_id', '=', runId).executeTakeFirst();

  async function pageOf(runId: string, after: number, limit: number): Promise<LogEntry[]> {
    const rows = await store.db
      .selectFrom('run_log_entries')
      .select(['seq', 'stream', 'at', 'text'])
      .where('run_id', '=', runId)
      .where('seq', '>', after)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ seq: row.seq, stream: row.stream, at: isoTime(row.at), text: row.text }));
  }

  return {
    async stateForUpdate(runId) {
      // The row first (a repeat does nothing), then locked: the cap is counted under it, one batch at a time.
      await store.db
        .insertInto('run_logs')
        .values({ run_id: runId, stored_bytes: 0, last_seq: -1, truncated: 0, ended_at: null, expired_at: null })
        .onConflict((oc) => oc.column('run_id').doNothing())
        .execute();
      return store.forUpdate(store.db.selectFrom('run_logs').selectAll().where('run_id', '=', runId)).executeTakeFirstOrThrow();
    },
    state: stateOf,
    async storedSeqs(runId, from, to) {
      const rows = await store.db
        .selectFrom('run_log_entries')
        .select('seq')
        .where('run_id', '=', runId)
        .where('seq', '>=', from)
        .where('seq', '<=', to)
        .execute();
      return new Set(rows.map((row) => row.seq));
    },
    async insert(rows) {
      // 1000 rows of 5 values: within both engines' bound on a statement's parameters.
      if (rows.length > 0)
        await store.db
          .insertInto('run_log_entries')
          .values(rows)
          .onConflict((oc) => oc.columns(['run_id', 'seq']).doNothing())
          .execute();
    },
    async update(runId, change) {
      await store.db.updateTable('run_logs').set(change).where('run_id', '=', runId).execute();
    },
    page: pageOf,
    async read(runId, after, limit) {
      const page = await pageOf(runId, after, limit);
      // The sweep removes the entries and marks the log expired in one transaction, but a page and a state are two
      // statements (on PostgreSQL they may straddle its commit): an expired state read after the page wins.
      const state = await stateOf(runId);
      const expired = state?.expired_at !== null && state?.expired_at !== undefined;
      return { entries: expired ? [] : page, truncated: state?.truncated === 1, expired };
    },
    async position(runId) {
      const row = await store.db
        .selectFrom('runs as r')
        .leftJoin('run_logs as l', 'l.run_id', 'r.run_id')
        .select(['r.status', 'l.last_seq'])
        .where('r.run_id', '=', runId)
        .executeTakeFirst();
      return row === undefined ? undefined : { status: row.status, lastSeq: row.last_seq ?? -1 };
    },
    async markEnded() {
      await store.db
        .updateTable('run_logs')
        .set({ ended_at: sql<number>`(SELECT r.finished_at FROM runs r WHERE r.run_id = run_logs.run_id)` })
        .where('ended_at', 'is', null)
        .where(sql<boolean>`EXISTS (SELECT 1 FROM runs r WHERE r.run_id = run_logs.run_id AND r.finished_at IS NOT NULL)`)
        .execute();
    },
    async expire(endedBefore, now, limit) {
      const due = await store.db
        .selectFrom('run_logs')
        .select('run_id')
        .where('expired_at', 'is', null)
        .where('ended_at', '<', endedBefore)
        .orderBy('ended_at')
        .limit(limit)
        .execute();
      const runIds = due.map((row) => row.run_id);
      if (runIds.length === 0) return [];
      await store.transaction(async () => {
        await store.db.deleteFrom('run_log_entries').where('run_id', 'in', runIds).execute();
        await store.db.updateTable('run_logs').set({ expired_at: now }).where('run_id', 'in', runIds).execute();
      });
      return runIds;
    },
  };
}

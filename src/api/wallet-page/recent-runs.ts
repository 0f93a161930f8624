// The signed-in wallet's recent runs, read from the service's runs table for the page (newest first).
import { sql } from 'kysely';
import type { Store } from '../store/store.js';

export const RECENT_RUNS_SHOWN = 10;

export interface RecentRun {
  run_id: string;
  agent_id: string;
  status: string;
  charged_cents: number;
  started_at: number;
}

export type RecentRuns = (userId: string) => Promise<RecentRun[]>;

export function createRecentRuns(store: Store): RecentRuns {
  return (userId) =>
    store.db
      .selectFrom('runs')
      .select(['run_id', 'agent_id', 'status', 'charged_cents', 'started_at'])
      .where('user_id', '=', userId)
      .orderBy('started_at', 'desc')
      // Runs started in the same millisecond: the later accepted first (SQLite's rowid; PostgreSQL has none, and
      // its run ids are random, so ties there are in id order).
      .$if(store.engine === 'sqlite', (query) => query.orderBy(sql`rowid`, 'desc'))
      .$if(store.engine !== 'sqlite', (query) => query.orderBy('run_id', 'desc'))
      .limit(RECENT_RUNS_SHOWN)
      .execute();
}

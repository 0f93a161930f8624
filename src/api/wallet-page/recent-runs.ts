// The signed-in wallet's recent runs, read from the service's runs table for the page (newest first).
import type { SqliteDatabase } from '../../lib/sqlite.js';

export const RECENT_RUNS_SHOWN = 10;

export interface RecentRun {
  run_id: string;
  agent_id: string;
  status: string;
  charged_cents: number;
  started_at: number;
}

export type RecentRuns = (userId: string) => RecentRun[];

export function createRecentRuns(db: SqliteDatabase): RecentRuns {
  const select = db.prepare<[string, number], RecentRun>(
    'SELECT run_id, agent_id, status, charged_cents, started_at FROM runs WHERE user_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?',
  );
  return (userId) => select.all(userId, RECENT_RUNS_SHOWN);
}

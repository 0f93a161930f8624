// `runs` (issue 3): the local run journal, newest first, with totals over every run that matches.
import type { SqliteDatabase } from '../lib/sqlite.js';
import type { RunStatus } from './store.js';

export interface RunRow {
  run_id: string | null;
  agent_id: string;
  status: RunStatus;
  charged_cents: number;
  balance_cents: number | null;
  error_code: string | null;
  source: string;
  idempotency_key: string;
  started_at: string;
  finished_at: string | null;
}

export interface RunTotals {
  runs: number;
  charged_cents: number;
  by_status: Record<RunStatus, number>;
}

export function runHistory(db: SqliteDatabase, filter: { agentId?: string; limit: number }): { runs: RunRow[]; totals: RunTotals } {
  const where = filter.agentId === undefined ? '' : 'WHERE agent_id = @agent';
  const params = filter.agentId === undefined ? {} : { agent: filter.agentId };
  const rows = db
    .prepare<Record<string, unknown>, Omit<RunRow, 'started_at' | 'finished_at'> & { started_at: number; finished_at: number | null }>(
      `SELECT run_id, agent_id, status, charged_cents, balance_cents, error_code, source, idempotency_key, started_at, finished_at
       FROM runs ${where} ORDER BY started_at DESC, rowid DESC LIMIT @limit`,
    )
    .all({ ...params, limit: filter.limit });
  const totals: RunTotals = { runs: 0, charged_cents: 0, by_status: { succeeded: 0, failed: 0, insufficient_balance: 0, pending: 0 } };
  const grouped = db
    .prepare<Record<string, unknown>, { status: RunStatus; count: number; charged: number }>(
      `SELECT status, COUNT(*) AS count, COALESCE(SUM(charged_cents), 0) AS charged FROM runs ${where} GROUP BY status`,
    )
    .all(params);
  for (const group of grouped) {
    totals.runs += group.count;
    totals.charged_cents += group.charged;
    totals.by_status[group.status] = group.count;
  }
  return {
    runs: rows.map((row) => ({
      ...row,
      started_at: new Date(row.started_at).toISOString(),
      finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
    })),
    totals,
  };
}

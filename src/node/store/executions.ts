// The executions table: the runs this node executes (docs/api.md "Runs on the node"). A row is written before the
// agent starts and holds the result before it is reported, so exactly-once survives a node's crash: a run found
// `running` after a restart is never started again (it is reported failed, interrupted), and a `finished` one is
// reported with its stored result.
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';

export type ExecutionStatus = 'running' | 'finished' | 'reported' | 'lost';

export interface Execution {
  run_id: string;
  agent_id: string;
  user_id: string;
  lease_id: string;
  status: ExecutionStatus;
  result_status: 'succeeded' | 'failed' | null;
  output_json: string | null;
  owner_pid: number | null;
  started_at: number;
  finished_at: number | null;
  reported_at: number | null;
}

/**
 * Records the start of a run; false when this node knows the run already (it never runs one twice). A run handed
 * again under a new lease after its attempt here was closed (reported interrupted, or lost) is a new attempt of a
 * retry-safe run (docs/api.md "Retries"): it starts afresh. The same lease never runs twice.
 */
export function executionStarted(
  db: SqliteDatabase,
  run: { run_id: string; agent_id: string; user_id: string; lease_id: string; owner_pid: number },
  now: number,
): boolean {
  const inserted = prepared(
    db,
    `INSERT INTO executions (run_id, agent_id, user_id, lease_id, status, owner_pid, started_at)
     VALUES (?, ?, ?, ?, 'running', ?, ?)
     ON CONFLICT (run_id) DO UPDATE SET lease_id = excluded.lease_id, status = 'running', result_status = NULL, output_json = NULL,
       owner_pid = excluded.owner_pid, started_at = excluded.started_at, finished_at = NULL, reported_at = NULL
     WHERE executions.status IN ('reported', 'lost') AND executions.lease_id <> excluded.lease_id`,
  ).run(run.run_id, run.agent_id, run.user_id, run.lease_id, run.owner_pid, now);
  return inserted.changes === 1;
}

/** The result, kept before it is sent. */
export function executionFinished(
  db: SqliteDatabase,
  runId: string,
  result: { status: 'succeeded' | 'failed'; output: unknown },
  now: number,
): void {
  prepared(
    db,
    `UPDATE executions SET status = 'finished', result_status = ?, output_json = ?, finished_at = ? WHERE run_id = ? AND status = 'running'`,
  ).run(result.status, JSON.stringify(result.output ?? null), now, runId);
}

/** How long a closed execution is remembered: a run id handed again in that time is known, never run twice. */
export const CLOSED_EXECUTION_RETENTION_MS = 7 * 24 * 3600 * 1000;

/**
 * The service has the result (reported), or will never take it (lost: the lease ran out, the run was refunded).
 * The output (up to 1 MiB) goes at once, as the service keeps it; the row itself after the retention, so a busy
 * node's database does not grow with every run.
 */
export function executionClosed(db: SqliteDatabase, runId: string, status: 'reported' | 'lost', now: number): void {
  prepared(db, 'UPDATE executions SET status = ?, reported_at = ?, output_json = NULL WHERE run_id = ?').run(status, now, runId);
  prepared(db, `DELETE FROM executions WHERE status IN ('reported', 'lost') AND reported_at < ?`).run(now - CLOSED_EXECUTION_RETENTION_MS);
}

export function findExecution(db: SqliteDatabase, runId: string): Execution | undefined {
  return prepared<[string], Execution>(db, 'SELECT * FROM executions WHERE run_id = ?').get(runId);
}

/** Runs not yet closed: running (here, or in a process that died) or finished and not yet reported. */
export function openExecutions(db: SqliteDatabase): Execution[] {
  return prepared<[], Execution>(db, `SELECT * FROM executions WHERE status IN ('running', 'finished') ORDER BY started_at`).all();
}

// The runs table: a run is inserted `running` in the transaction that debits its price, and finished once, in
// the transaction that refunds it when it failed.
import type { SqliteDatabase } from '../../lib/sqlite.js';

export interface RunningRun {
  run_id: string;
  user_id: string;
  agent_id: string;
  /** The price debited when the run started. */
  charged_cents: number;
  started_at: number;
}

export type RunStatus = 'succeeded' | 'failed';

export interface RunStore {
  insertRunning(run: RunningRun): void;
  finish(runId: string, status: RunStatus, chargedCents: number, outputJson: string, finishedAt: number): void;
  listRunning(): RunningRun[];
}

export function createRunStore(db: SqliteDatabase): RunStore {
  const insert = db.prepare(
    "INSERT INTO runs (run_id, user_id, agent_id, status, charged_cents, output_json, started_at) VALUES (?, ?, ?, 'running', ?, NULL, ?)",
  );
  // Only a running run is finished: a run is never finished (or refunded) twice.
  const finishRunning = db.prepare(
    "UPDATE runs SET status = ?, charged_cents = ?, output_json = ?, finished_at = ? WHERE run_id = ? AND status = 'running'",
  );
  const selectRunning = db.prepare<[], RunningRun>(
    "SELECT run_id, user_id, agent_id, charged_cents, started_at FROM runs WHERE status = 'running' ORDER BY started_at",
  );

  return {
    insertRunning(run) {
      insert.run(run.run_id, run.user_id, run.agent_id, run.charged_cents, run.started_at);
    },
    finish(runId, status, chargedCents, outputJson, finishedAt) {
      if (finishRunning.run(status, chargedCents, outputJson, finishedAt, runId).changes !== 1) {
        throw new Error(`run ${runId} is not running`);
      }
    },
    listRunning() {
      return selectRunning.all();
    },
  };
}

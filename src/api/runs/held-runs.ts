// The runs this instance handed to nodes, as their polls took them (dispatch.ts), kept until their result: the one
// statement that finishes a run on PostgreSQL goes by the row as it was seen (finish-statement.ts), and the row from
// the claim saves reading it again. Only a hint: the statement checks that the row still is so, and a result that
// finds none here (handed out by another instance, forgotten) reads the row. Without the run's input and output,
// which the finish does not need, so that a full map costs little.
import type { RunRow } from './run-store.js';

/** Runs remembered at most; past it the oldest go first (their results read their row). */
const HELD_RUNS_KEPT = 20_000;

export interface HeldRuns {
  remember(runs: readonly RunRow[]): void;
  /** The run as it was handed out, forgotten here: a result is finished once. */
  take(runId: string): RunRow | undefined;
  /** How many are remembered now. */
  readonly size: number;
}

export function createHeldRuns(): HeldRuns {
  const rows = new Map<string, RunRow>();
  return {
    remember(runs) {
      for (const run of runs) {
        if (rows.size >= HELD_RUNS_KEPT) rows.delete(rows.keys().next().value!);
        rows.set(run.run_id, { ...run, input_json: null, output_json: null });
      }
    },
    take(runId) {
      const row = rows.get(runId);
      rows.delete(runId);
      return row;
    },
    get size() {
      return rows.size;
    },
  };
}

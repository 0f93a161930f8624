// Ends a run once, in one transaction (DECISIONS.md "Execute"; docs/api.md "Runs on the node"): its status and
// output, the refund when it failed ("a run that fails is refunded in the same ledger"), and the final answer that
// replays of its Idempotency-Key return. Whoever finishes it (the node's result, the lease sweeper, a restart), the
// status guard makes it happen once: a run is never finished, nor refunded, twice.
import type { ServiceContext } from '../context.js';
import type { IdempotencyStore } from './idempotency.js';
import type { RunRow, RunStore } from './run-store.js';
import { runView } from './run-view.js';
import { createRunEventOutbox } from '../webhooks/outbox.js';

/** Why a run failed: the agent's reasons as the node reports them, and the service's own. */
export type RunFailureReason =
  | 'timeout'
  | 'exit'
  | 'bad_output'
  | 'spawn'
  | 'aborted'
  | 'interrupted'
  /** A limit of the run's own on its node (docs/operations.md "Agent isolation"): its memory, its tasks, its disk. */
  | 'memory_limit'
  | 'task_limit'
  | 'disk_quota'
  /** The node holding it stopped renewing its lease (killed, disconnected) before it reported. */
  | 'node_lost'
  /** No node took it from the queue in time, or none that could is online any more. */
  | 'not_picked_up';

/** A failed run's output: the reason as a stable word, and a sentence for people. */
export interface FailedRunOutput {
  error: string;
  message: string;
}

export type RunOutcome = { status: 'succeeded'; output: unknown } | { status: 'failed'; output: FailedRunOutput };

export function failed(error: RunFailureReason, message: string): RunOutcome {
  return { status: 'failed', output: { error, message } };
}

/** `refunded_cents`: what the failure gave back (the run's charge; 0 when it succeeded or cost nothing). */
export type Finished = { kind: 'finished'; json: string; refunded_cents: number } | { kind: 'not_held' };

/** `holder`: the result of a node is accepted only from the node and lease that hold the run. */
export type FinishRun = (runId: string, outcome: RunOutcome, holder?: { node_id: string; lease_id: string }) => Promise<Finished>;

export const FINISHED_RUN_STATUS_CODE = 200;

export function createRunFinisher(ctx: ServiceContext, runs: RunStore, keys: IdempotencyStore): FinishRun {
  const outbox = createRunEventOutbox(ctx.store, ctx.clock);
  return (runId, outcome, holder) =>
    ctx.store.transaction(async (): Promise<Finished> => {
      // Locked (PostgreSQL) so the node's result and another instance's sweep never both finish it; the status guard
      // below is then decided on the row as it really stands.
      const row = await runs.getForUpdate(runId);
      if (row === undefined || (row.status !== 'queued' && row.status !== 'running')) return { kind: 'not_held' };
      if (holder !== undefined && (row.node_id !== holder.node_id || row.lease_id !== holder.lease_id)) return { kind: 'not_held' };
      const now = ctx.clock.now();
      const chargedCents = outcome.status === 'succeeded' ? row.charged_cents : 0;
      const outputJson = JSON.stringify(outcome.output ?? null);
      const by = holder === undefined ? 'service' : 'node';
      if (!(await runs.finish(runId, outcome.status, chargedCents, outputJson, by, now))) return { kind: 'not_held' };
      const balanceCents =
        outcome.status === 'failed' && row.charged_cents > 0
          ? await ctx.ledger.refundRun({ user_id: row.user_id, run_id: runId, amount_cents: row.charged_cents })
          : await ctx.ledger.balance(row.user_id);
      // The row as the UPDATE above left it (runs.finish), without reading it back.
      const finished: RunRow = { ...row, status: outcome.status, charged_cents: chargedCents, output_json: outputJson, finished_by: by, finished_at: now, lease_expires_at: null };
      const json = JSON.stringify(runView(finished, balanceCents));
      await keys.completeRun(runId, FINISHED_RUN_STATUS_CODE, json);
      await outbox.record(finished);
      return { kind: 'finished', json, refunded_cents: outcome.status === 'failed' ? row.charged_cents : 0 };
    });
}

// Ends a run in one transaction (DECISIONS.md "Execute"): its status and output, the refund when it failed
// ("a run that fails in the runtime is refunded in the same ledger"), and the response its Idempotency-Key replays.
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { IdempotencyStore } from './idempotency.js';
import type { RunningRun, RunStore } from './run-store.js';

export type RunFailureReason = 'timeout' | 'aborted' | 'exit' | 'bad_output' | 'spawn' | 'interrupted' | 'internal';

/** A failed run's output: the reason as a stable word, and a sentence for people. */
export interface FailedRunOutput {
  error: RunFailureReason;
  message: string;
}

export type RunOutcome =
  | { status: 'succeeded'; output: unknown; outputJson: string }
  | { status: 'failed'; output: FailedRunOutput; outputJson: string };

export function succeeded(output: unknown, outputJson: string): RunOutcome {
  return { status: 'succeeded', output, outputJson };
}

export function failed(error: RunFailureReason, message: string): RunOutcome {
  const output: FailedRunOutput = { error, message };
  return { status: 'failed', output, outputJson: JSON.stringify(output) };
}

export interface IdempotencyKeyRef {
  user_id: string;
  idempotency_key: string;
}

/** Returns the response body (JSON) of the finished run; the HTTP status is 200 whether it succeeded or failed. */
export type FinishRun = (run: RunningRun, outcome: RunOutcome, key: IdempotencyKeyRef | undefined) => string;

export const FINISHED_RUN_STATUS_CODE = 200;

export function createRunFinisher(ctx: ServiceContext, runs: RunStore, keys: IdempotencyStore): FinishRun {
  return ctx.db.transaction((run: RunningRun, outcome: RunOutcome, key: IdempotencyKeyRef | undefined): string => {
    const finishedAt = ctx.clock.now();
    const chargedCents = outcome.status === 'succeeded' ? run.charged_cents : 0;
    runs.finish(run.run_id, outcome.status, chargedCents, outcome.outputJson, finishedAt);
    const balanceCents =
      outcome.status === 'failed' && run.charged_cents > 0
        ? ctx.ledger.refundRun({ user_id: run.user_id, run_id: run.run_id, amount_cents: run.charged_cents })
        : ctx.ledger.balance(run.user_id);
    const json = JSON.stringify({
      run_id: run.run_id,
      agent_id: run.agent_id,
      status: outcome.status,
      charged_cents: chargedCents,
      balance_cents: balanceCents,
      output: outcome.output,
      started_at: isoTime(run.started_at),
      finished_at: isoTime(finishedAt),
    });
    if (key !== undefined) keys.complete(key.user_id, key.idempotency_key, FINISHED_RUN_STATUS_CODE, json);
    return json;
  }).immediate;
}

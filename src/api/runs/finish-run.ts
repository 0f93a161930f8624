// Ends a run once, in one transaction (docs/decisions/0008-execute-debits-atomically.md; docs/api.md
// "Runs on the node"): its status and output, the refund when it failed or was cancelled
// ("a run that fails is refunded in the same ledger"), and the final answer that replays of its Idempotency-Key
// return. Whoever finishes it (the node's result, the lease sweeper, a restart, a cancel), the status guard makes it
// happen once: a run is never finished, nor refunded, twice; and what the finisher expects of the locked row
// (Expected) keeps a decision taken on an older read from ending a newer attempt, or a lease renewed since it was
// read. An attempt lost with its node (node_lost, or interrupted by the node's restart) of a retry-safe run with
// attempts left is not the run's end: the run goes back to the queue under the same id and charge (docs/api.md
// "Retries").
// On PostgreSQL a node's result that ends its run is first tried as one statement (finish-statement.ts), which goes
// by the run as the service saw it and writes nothing unless the run still is so; the transaction decides the rest.
import { MAX_RUN_ATTEMPTS } from '../../contract/jobs.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { ServiceContext } from '../context.js';
import { createBudgetStore } from '../budgets/budget-store.js';
import { answerAroundBalance, createFinishStatement } from './finish-statement.js';
import type { HeldRuns } from './held-runs.js';
import type { IdempotencyStore } from './idempotency.js';
import type { RunRow, RunStore } from './run-store.js';
import { runView } from './run-view.js';
import { createRunEventOutbox, eventOf, payloadOf } from '../webhooks/outbox.js';

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
  /** Its agent said it failed (the kit's `fail`, docs/api.md "The kit's channel"): refunded as every failed run is. */
  | 'declared_failure'
  /** The node holding it stopped renewing its lease (killed, disconnected) before it reported. */
  | 'node_lost'
  /** No node took it from the queue in time, or none is left that could. */
  | 'not_picked_up'
  /** Its user cancelled it (POST /v1/swarm/runs/{run_id}/cancel): it ends `cancelled`, refunded. */
  | 'cancelled'
  /**
   * Its node handed it back without starting the agent (its lease had run out by the node's reckoning, or it could not
   * journal the run): nothing ran, so it goes back to the queue whether or not the run is retry-safe.
   */
  | 'not_started';

/** The failures after which a retry-safe run runs again: the agent did not fail, its node went away. */
const RETRIED_FAILURES: ReadonlySet<string> = new Set<RunFailureReason>(['node_lost', 'interrupted']);
/** The failure after which any run runs again: its agent never started. */
const NOT_STARTED: RunFailureReason = 'not_started';

/** A failed run's output: the reason as a stable word, and a sentence for people. */
export interface FailedRunOutput {
  error: string;
  message: string;
}

export type RunOutcome = { status: 'succeeded'; output: unknown } | { status: 'failed'; output: FailedRunOutput };

export function failed(error: RunFailureReason, message: string): RunOutcome {
  return { status: 'failed', output: { error, message } };
}

/**
 * `refunded_cents`: what the failure gave back (the run's charge; 0 when it succeeded or cost nothing). `requeued`:
 * the attempt ended, and the run waits in the queue for its next one.
 */
export type Finished =
  { kind: 'finished'; json: string; refunded_cents: number } | { kind: 'requeued'; run: RunRow } | { kind: 'not_held' };

/**
 * What the row must still be, checked under its lock, for the finisher to end it; absent: any queued or running run.
 * - `holder`: a node's result, taken only from the node and lease that hold the run (an expired lease the sweep has
 *   not ended yet still holds it).
 * - `lease_out`: the sweep's, for the attempt whose lease it saw run out, and only while it still has (by the
 *   finisher's clock: a renewal meanwhile keeps the run).
 * - `queued`: the sweep's or a cancel's, for the queued attempt it read (a claim meanwhile keeps the run).
 * - `cancel_overdue`: the sweep's, for the attempt whose node did not stop it in time.
 */
export type Expected =
  | { kind: 'holder'; node_id: string; lease_id: string }
  | { kind: 'lease_out'; lease_id: string | null }
  | { kind: 'queued'; attempt: number }
  | { kind: 'cancel_overdue'; lease_id: string | null };

export type FinishRun = (runId: string, outcome: RunOutcome, expected?: Expected) => Promise<Finished>;

export const FINISHED_RUN_STATUS_CODE = 200;

export function createRunFinisher(ctx: ServiceContext, runs: RunStore, keys: IdempotencyStore, held?: HeldRuns): FinishRun {
  const outbox = createRunEventOutbox(ctx.store, ctx.clock);
  const budgets = createBudgetStore(ctx.store, ctx.clock);
  const oneStatement = ctx.store.engine === 'postgres' ? createFinishStatement(ctx.store) : undefined;

  /** A node's result in one statement (PostgreSQL), or undefined: the transaction decides. */
  const inOneStatement = async (runId: string, outcome: RunOutcome, expected: Expected | undefined): Promise<Finished | undefined> => {
    if (oneStatement === undefined || expected?.kind !== 'holder') return undefined;
    const row = held?.take(runId) ?? (await runs.get(runId));
    const now = ctx.clock.now();
    if (row === undefined || !stillAsExpected(row, expected, now)) return undefined;
    if (outcome.status === 'failed' && mayRunAgain(row, outcome.output.error)) return undefined;
    const finished = endOf(row, outcome, 'node', now);
    const refundCents = outcome.status === 'failed' ? row.charged_cents : 0;
    const event = eventOf(finished);
    const eventId = timeOrderedId(now);
    const json = await oneStatement({
      was: row,
      finished,
      refundCents,
      answer: answerAroundBalance(JSON.stringify(runView(finished, 0)), 0),
      event: { type: event, id: eventId, payload: JSON.stringify(payloadOf(finished, event, eventId, now)) },
    });
    return json === undefined ? undefined : { kind: 'finished', json, refunded_cents: refundCents };
  };

  const inTransaction = (runId: string, outcome: RunOutcome, expected: Expected | undefined): Promise<Finished> =>
    ctx.store.transaction(async (): Promise<Finished> => {
      // Locked (PostgreSQL) so the node's result and another instance's sweep never both finish it; the status guard
      // below is then decided on the row as it really stands.
      const row = await runs.getForUpdate(runId);
      if (row === undefined || (row.status !== 'queued' && row.status !== 'running')) return { kind: 'not_held' };
      const now = ctx.clock.now();
      if (expected !== undefined && !stillAsExpected(row, expected, now)) return { kind: 'not_held' };
      if (outcome.status === 'failed' && mayRunAgain(row, outcome.output.error)) {
        await recordAttempt(ctx, row, outcome.output, now);
        // At least a lease's time to be taken again, even when execute asked not to wait (queue_seconds 0).
        const waitMs = Math.max((row.queue_seconds ?? 0) * 1000, ctx.runTiming.leaseMs);
        if (await runs.requeue(runId, now + waitMs)) {
          // The row as the UPDATE left it (runs.requeue), without reading it back.
          const requeued: RunRow = {
            ...row,
            status: 'queued',
            node_id: null,
            lease_id: null,
            lease_expires_at: null,
            claimed_at: null,
            queue_deadline_at: now + waitMs,
            attempt: row.attempt + 1,
          };
          return { kind: 'requeued', run: requeued };
        }
      }
      const by = expected?.kind === 'holder' ? 'node' : 'service';
      // The row as the UPDATE below leaves it (runs.finish), without reading it back.
      const finished = endOf(row, outcome, by, now);
      if (
        !(await runs.finish(
          runId,
          outcome.status,
          finished.charged_cents,
          finished.output_json!,
          by,
          now,
          finished.cancelled_at ?? undefined,
        ))
      )
        return { kind: 'not_held' };
      let balanceCents: number;
      if (outcome.status === 'failed' && row.charged_cents > 0) {
        balanceCents = await ctx.ledger.refundRun({ user_id: row.user_id, run_id: runId, amount_cents: row.charged_cents });
        await budgets.refund(row.user_id, row.agent_id, row.charged_cents, row.started_at);
      } else {
        balanceCents = await ctx.ledger.balance(row.user_id);
      }
      const json = JSON.stringify(runView(finished, balanceCents));
      await keys.completeRun(runId, FINISHED_RUN_STATUS_CODE, json);
      await outbox.record(finished);
      return { kind: 'finished', json, refunded_cents: outcome.status === 'failed' ? row.charged_cents : 0 };
    });

  return async (runId, outcome, expected) => (await inOneStatement(runId, outcome, expected)) ?? inTransaction(runId, outcome, expected);
}

/** The run as it ends with `outcome`: failed runs are refunded (charged 0); cancelled only when its user asked. */
function endOf(row: RunRow, outcome: RunOutcome, by: 'node' | 'service', now: number): RunRow {
  // Cancelled only when its user asked: a node saying so of a run nobody cancelled is a plain failure.
  const cancelled = outcome.status === 'failed' && outcome.output.error === 'cancelled' && row.cancel_requested_at !== null;
  const output =
    outcome.status === 'failed' && outcome.output.error === 'cancelled' && !cancelled
      ? { ...outcome.output, error: 'aborted' }
      : outcome.output;
  return {
    ...row,
    status: outcome.status,
    charged_cents: outcome.status === 'succeeded' ? row.charged_cents : 0,
    output_json: JSON.stringify(output ?? null),
    finished_by: by,
    finished_at: now,
    lease_expires_at: null,
    cancelled_at: cancelled ? now : null,
  };
}

function stillAsExpected(row: RunRow, expected: Expected, now: number): boolean {
  switch (expected.kind) {
    case 'holder':
      return row.status === 'running' && row.node_id === expected.node_id && row.lease_id === expected.lease_id;
    case 'lease_out':
      return (
        row.status === 'running' && row.lease_id === expected.lease_id && (row.lease_expires_at === null || row.lease_expires_at <= now)
      );
    case 'queued':
      return row.status === 'queued' && row.attempt === expected.attempt;
    case 'cancel_overdue':
      return row.status === 'running' && row.lease_id === expected.lease_id && row.cancel_requested_at !== null;
  }
}

/**
 * Not cancelled, with attempts left (MAX_RUN_ATTEMPTS in all), and either retry-safe with its node gone, or never
 * started by its node at all.
 */
function mayRunAgain(row: RunRow, error: string): boolean {
  if (row.status !== 'running' || row.attempt >= MAX_RUN_ATTEMPTS || row.cancel_requested_at !== null) return false;
  return error === NOT_STARTED || (row.retry_safe === 1 && RETRIED_FAILURES.has(error));
}

/** The attempt that ended, as the run's attempts show it (GET /v1/swarm/runs/{run_id}). */
async function recordAttempt(ctx: ServiceContext, row: RunRow, failure: FailedRunOutput, now: number): Promise<void> {
  await ctx.store.db
    .insertInto('run_attempts')
    .values({
      run_id: row.run_id,
      attempt: row.attempt,
      node_id: row.node_id,
      claimed_at: row.claimed_at,
      ended_at: now,
      error: failure.error,
      message: failure.message,
    })
    .onConflict((conflict) => conflict.columns(['run_id', 'attempt']).doNothing())
    .execute();
}

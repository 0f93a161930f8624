// The service's side of exactly-once billing across node loss (docs/api.md "Runs on the node"). A node holds each run
// under a lease that its polls renew; a node killed or cut off mid-run stops renewing, and once its lease has run
// out the run is failed `node_lost` and refunded, once (finish-run.ts guards the status). A result the node sends
// later is refused (409 lease_lost). A queued run that no node takes (none online that could, or waiting past the
// queue timeout) is failed `not_picked_up` and refunded the same way. The sweep runs at start and every
// `sweepMs`; it only ever touches runs whose time is up, so a restart never fails a run a live node is serving.
import { repeatInBackground, type ServiceContext } from '../context.js';
import { createIdempotencyStore } from './idempotency.js';
import { failed, type Expected, type FinishRun, type RunOutcome } from './finish-run.js';
import type { RunEvents } from './run-events.js';
import type { RunRow, RunStore } from './run-store.js';

const KEY_PURGE_INTERVAL_MS = 60 * 60 * 1000;

export interface SweepCounts {
  node_lost: number;
  not_picked_up: number;
  /** Lost with their node, and queued again for another attempt (retry-safe runs). */
  retried: number;
  /** Cancelled runs whose node did not report them stopped within the cancel grace (RunTiming.cancelGraceMs). */
  cancelled: number;
}

export async function sweepRuns(ctx: ServiceContext, runs: RunStore, finish: FinishRun, events: RunEvents): Promise<SweepCounts> {
  const now = ctx.clock.now();
  const { queueTimeoutMs, cancelGraceMs } = ctx.runTiming;
  const counts: SweepCounts = { node_lost: 0, not_picked_up: 0, retried: 0, cancelled: 0 };
  // Each run is ended only as it was read here (finish-run.ts Expected): one claimed, renewed or requeued since is
  // left as it is, and a late result of an attempt ended here is refused.
  const end = async (
    run: RunRow,
    outcome: RunOutcome,
    count: 'node_lost' | 'not_picked_up' | 'cancelled',
    expected: Expected,
  ): Promise<void> => {
    const ended = await finish(run.run_id, outcome, expected);
    if (ended.kind === 'finished') {
      counts[count] += 1;
      events.finished(run.run_id);
    } else if (ended.kind === 'requeued') {
      counts.retried += 1;
      events.queued(run.user_id);
    }
  };
  for (const run of await runs.cancelsOverdue(now - cancelGraceMs)) {
    await end(
      run,
      failed('cancelled', `cancelled by its user; node ${run.node_id} did not report the run stopped, so it was ended here and refunded`),
      'cancelled',
      {
        kind: 'cancel_overdue',
        lease_id: run.lease_id,
      },
    );
  }
  for (const run of await runs.expiredLeases(now)) {
    const outcome =
      run.lease_expires_at === null
        ? failed('interrupted', 'the run was cut short when the service restarted')
        : failed('node_lost', `node ${run.node_id} stopped renewing its lease before it reported the result`);
    await end(run, outcome, 'node_lost', { kind: 'lease_out', lease_id: run.lease_id });
  }
  for (const run of await runs.stranded(now, now - queueTimeoutMs)) {
    await end(
      run,
      failed(
        'not_picked_up',
        'no node took the run in time (queue_seconds), or none is left that serves its agent and carries its labels; it was refunded',
      ),
      'not_picked_up',
      {
        kind: 'queued',
        attempt: run.attempt,
      },
    );
  }
  return counts;
}

/**
 * Sweeps every `sweepMs`, and purges Idempotency-Keys past their 24 h hourly; both stop when the service closes.
 * Several instances on one database sweep alike: each run is finished under its row lock (finish-run.ts), so one
 * of them wins and the others find it finished; the purge deletes what is expired whoever runs it.
 */
export function scheduleSweeps(
  ctx: ServiceContext,
  sweep: () => Promise<unknown>,
  log: { warn(details: object, message: string): void },
): void {
  const keys = createIdempotencyStore(ctx.store);
  repeatInBackground(ctx, sweep, ctx.runTiming.sweepMs, 'run sweep', log);
  repeatInBackground(ctx, () => keys.purgeExpired(ctx.clock.now()), KEY_PURGE_INTERVAL_MS, 'idempotency key purge', log);
}

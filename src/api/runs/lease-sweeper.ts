// The service's side of exactly-once billing across node loss (docs/api.md "Runs on the node"). A node holds each run
// under a lease that its polls renew; a node killed or cut off mid-run stops renewing, and once its lease has run
// out the run is failed `node_lost` and refunded, once (finish-run.ts guards the status). A result the node sends
// later is refused (409 lease_lost). A queued run that no node takes (none online that could, or waiting past the
// queue timeout) is failed `not_picked_up` and refunded the same way. The sweep runs at start and every
// `sweepMs`; it only ever touches runs whose time is up, so a restart never fails a run a live node is serving.
import { runInBackground, type ServiceContext } from '../context.js';
import { createIdempotencyStore } from './idempotency.js';
import { failed, type FinishRun } from './finish-run.js';
import type { RunEvents } from './run-events.js';
import type { RunStore } from './run-store.js';

const KEY_PURGE_INTERVAL_MS = 60 * 60 * 1000;

export interface SweepCounts {
  node_lost: number;
  not_picked_up: number;
}

export async function sweepRuns(ctx: ServiceContext, runs: RunStore, finish: FinishRun, events: RunEvents): Promise<SweepCounts> {
  const now = ctx.clock.now();
  const { leaseMs, queueTimeoutMs } = ctx.runTiming;
  const counts: SweepCounts = { node_lost: 0, not_picked_up: 0 };
  for (const run of await runs.expiredLeases(now)) {
    const outcome =
      run.lease_expires_at === null
        ? failed('interrupted', 'the run was cut short when the service restarted; it was refunded')
        : failed('node_lost', `node ${run.node_id} stopped renewing its lease before it reported the result; the run was refunded`);
    if ((await finish(run.run_id, outcome)).kind === 'finished') {
      counts.node_lost += 1;
      events.finished(run.run_id);
    }
  }
  for (const run of await runs.stranded(now - queueTimeoutMs, now - leaseMs)) {
    const outcome = failed('not_picked_up', 'no node took the run: none that serves its agent (and carries its labels) was online in time; it was refunded');
    if ((await finish(run.run_id, outcome)).kind === 'finished') {
      counts.not_picked_up += 1;
      events.finished(run.run_id);
    }
  }
  return counts;
}

/**
 * Sweeps every `sweepMs` (the next one `sweepMs` after the last ended, so a slow one never overlaps the next), and
 * purges Idempotency-Keys past their 24 h hourly; both stop when the service closes. Several instances on one
 * database sweep alike: each run is finished under its row lock (finish-run.ts), so one of them wins and the others
 * find it finished; the purge deletes what is expired whoever runs it.
 */
export function scheduleSweeps(ctx: ServiceContext, sweep: () => Promise<unknown>, log: { warn(details: object, message: string): void }): void {
  const keys = createIdempotencyStore(ctx.store);
  const repeat = (work: () => Promise<unknown>, everyMs: number, what: string): void => {
    let timer: NodeJS.Timeout | undefined;
    ctx.shutdownSignal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    const next = (): void => {
      if (ctx.shutdownSignal.aborted) return;
      timer = setTimeout(() => {
        // A busy, full or unreachable database: the next round tries again (the runs stay as they are meanwhile).
        const round = work().catch((error: unknown) => log.warn({ err: error }, `${what} failed`));
        runInBackground(ctx, round);
        void round.then(next);
      }, everyMs);
      timer.unref();
    };
    next();
  };
  repeat(sweep, ctx.runTiming.sweepMs, 'run sweep');
  repeat(() => keys.purgeExpired(ctx.clock.now()), KEY_PURGE_INTERVAL_MS, 'idempotency key purge');
}

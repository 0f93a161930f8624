// What a restart does with the work a crash cut short (DECISIONS.md "Execute": every charged cent has exactly one
// run). The service is the only writer of its data directory, so at start no run can still be running: a `running`
// run lost its agent when the process died. It is failed and refunded like any failed run, and its response is
// stored on the Idempotency-Key that started it, so the client's retry with that key learns what happened
// (failed, charged 0) instead of waiting on a key that would stay in progress forever. A new key runs the agent
// again.
import type { ServiceContext } from '../context.js';
import { createIdempotencyStore } from './idempotency.js';
import { createRunFinisher, failed, type IdempotencyKeyRef } from './finish-run.js';
import { createRunStore } from './run-store.js';

const PURGE_INTERVAL_MS = 60 * 60 * 1000;

/** Call once at start, before the service takes requests. Returns the number of runs it failed and refunded. */
export function recoverInterruptedRuns(ctx: ServiceContext): number {
  const runs = createRunStore(ctx.db);
  const keys = createIdempotencyStore(ctx.db);
  const finishRun = createRunFinisher(ctx, runs, keys);
  return ctx.db.transaction(() => {
    const keyByRun = new Map<string, IdempotencyKeyRef>();
    for (const pending of keys.listInProgress()) {
      if (pending.run_id !== undefined) keyByRun.set(pending.run_id, pending);
    }
    const interrupted = runs.listRunning();
    for (const run of interrupted) {
      finishRun(run, failed('interrupted', 'the service restarted while the agent was running; the run was refunded'), keyByRun.get(run.run_id));
    }
    keys.purgeExpired(ctx.clock.now());
    return interrupted.length;
  }).immediate();
}

/** Expired Idempotency-Keys are dropped hourly (a lookup already ignores them); stops when the service closes. */
export function scheduleIdempotencyKeyPurge(ctx: ServiceContext): void {
  const keys = createIdempotencyStore(ctx.db);
  const timer = setInterval(() => keys.purgeExpired(ctx.clock.now()), PURGE_INTERVAL_MS);
  timer.unref();
  ctx.shutdownSignal.addEventListener('abort', () => clearInterval(timer), { once: true });
}

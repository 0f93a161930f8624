// Stored logs expire (docs/api.md "Run logs"): RUN_DATA_RETENTION_DAYS after their run ended, a run's entries are
// removed, and its events with them; its row stays, so the log reads as expired rather than empty. Hourly by the
// service's clock, a batch a round (a full batch brings the next round to the next run sweep); on PostgreSQL every
// instance may sweep, and deleting what another instance deleted already is no error.
import { RUN_DATA_RETENTION_DAYS } from '../../contract/run-log-limits.js';
import { DAY_MS } from '../../lib/clock.js';
import { repeatByServiceClock, type ServiceContext } from '../context.js';
import { createEventStore } from '../run-stream/event-store.js';
import { createLogStore } from './log-store.js';

const SWEEP_EVERY_MS = 3_600_000;
/** Logs removed in one round. */
const BATCH = 100;

export function scheduleLogRetention(
  ctx: ServiceContext,
  log: { info(details: object, message: string): void; warn(details: object, message: string): void },
): void {
  const logs = createLogStore(ctx.store);
  const events = createEventStore(ctx.store);
  const round = async (now: number): Promise<boolean> => {
    await logs.markEnded();
    const expired = await logs.expire(now - RUN_DATA_RETENTION_DAYS * DAY_MS, now, BATCH);
    if (expired.length > 0)
      log.info({ runs: expired.length }, `run logs removed: their runs ended more than ${RUN_DATA_RETENTION_DAYS} days ago`);
    // A run's events go when its log does (docs/api.md "Run events"), whether or not it has a log.
    const eventsGone = await events.expire(now - RUN_DATA_RETENTION_DAYS * DAY_MS, BATCH);
    return expired.length === BATCH || eventsGone.length === BATCH;
  };
  repeatByServiceClock(ctx, SWEEP_EVERY_MS, round, 'run log retention sweep', log);
}

// On PostgreSQL several instances decide on the same rows whether a lease ran out, a node is online or a queued run
// waited too long: they must agree on the time, whatever their hosts' clocks say. There the service's clock is the
// database's (docs/operations.md "Time on PostgreSQL"): clock_timestamp() read at start and every RESYNC_MS, carried
// between two reads by this process's monotonic clock. A decision costs no round trip, and no instance's wall clock
// enters one: an instance whose clock is minutes off sweeps, leases and counts nodes online as the others do.
import { sql } from 'kysely';
import type { Clock } from '../../lib/clock.js';
import type { Store } from './store.js';

/** Between two reads the monotonic clock drifts from the database's by parts per million: well under a millisecond. */
const RESYNC_MS = 10_000;

/** The database's clock, read once before this resolves; re-read every RESYNC_MS until `stop` aborts. */
export async function databaseClock(store: Store, stop: AbortSignal): Promise<Clock> {
  let anchor = await readDatabaseTime(store);
  let last = 0;
  const timer = setInterval(() => {
    // A failed read keeps the last anchor: the monotonic clock carries the time meanwhile.
    readDatabaseTime(store).then(
      (read) => {
        anchor = read;
      },
      () => undefined,
    );
  }, RESYNC_MS);
  timer.unref();
  stop.addEventListener('abort', () => clearInterval(timer), { once: true });
  return {
    now() {
      // Whole milliseconds (the columns are integers), never going back at a re-read.
      last = Math.max(last, Math.floor(anchor.databaseMs + (performance.now() - anchor.monotonicMs)));
      return last;
    },
  };
}

/** The database's time and the monotonic time it was read at: the middle of the round trip. */
async function readDatabaseTime(store: Store): Promise<{ databaseMs: number; monotonicMs: number }> {
  const sent = performance.now();
  const { rows } = await sql<{ ms: string | number }>`SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms`.execute(store.db);
  const received = performance.now();
  return { databaseMs: Number(rows[0]!.ms), monotonicMs: (sent + received) / 2 };
}

// How often one user may upload (docs/api.md "Agent upload", "Quota and retention"): every upload request counts,
// refused ones included, against an hourly budget per user, checked before the body is read, so a flood of 5 MiB
// bodies is refused before a byte of them is taken in. 429 rate_limited with Retry-After: the next hour's budget.
// Counted in the database, in hours aligned on the clock, by one upsert that takes an upload and reads back how many
// the hour has had (store/rate-counters-migration.ts): every instance counts against the same budget, and two
// uploads at once cannot both take its last one (docs/api.md "Counted limits under concurrency").
import { sql } from 'kysely';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';

export const UPLOAD_RATE_WINDOW_MS = 3_600_000;
/** One a minute on average, in a burst if need be: a developer iterating, or CI on every commit, stays under it. */
export const DEFAULT_UPLOADS_PER_HOUR = 60;
const COUNTER = 'uploads';

export interface UploadRate {
  /** Counts one upload of `userId`; throws 429 rate_limited (with Retry-After) when it is over the hour's budget. */
  take(userId: string): Promise<{ remaining: number; resetSeconds: number }>;
}

export function createUploadRate(store: Store, limitPerHour: number, clock: Clock): UploadRate {
  // The users this instance saw over the budget, and the hour: refused again without a write, since an hour's count
  // only grows. Only the current hour is kept, so memory holds this hour's refused uploaders at most.
  let overStart = 0;
  let over = new Set<string>();
  const refuse = (resetSeconds: number): SvcError =>
    new SvcError('rate_limited', `more than ${limitPerHour} uploads an hour by this user`, {
      retryAfterSeconds: resetSeconds,
      remedy: `Wait ${resetSeconds} seconds (Retry-After), then upload again; an unchanged bundle needs no new upload.`,
      extensions: { uploads_per_hour: limitPerHour },
    });
  return {
    async take(userId) {
      const now = clock.now();
      const start = now - (now % UPLOAD_RATE_WINDOW_MS);
      const resetSeconds = Math.max(1, Math.ceil((start + UPLOAD_RATE_WINDOW_MS - now) / 1000));
      if (limitPerHour <= 0) return { remaining: Number.POSITIVE_INFINITY, resetSeconds };
      if (start !== overStart) {
        overStart = start;
        over = new Set();
      }
      if (over.has(userId)) throw refuse(resetSeconds);
      // A row of an earlier hour starts again at 1; one of a later hour (an instance whose clock is ahead) keeps
      // counting there. Each SET reads the row as it was before the statement.
      const later = sql<boolean>`rate_counters.window_start < excluded.window_start`;
      const row = await store.statement(() =>
        store.db
          .insertInto('rate_counters')
          .values({ counter: COUNTER, subject: userId, window_start: start, taken: 1 })
          .onConflict((conflict) =>
            conflict.columns(['counter', 'subject']).doUpdateSet({
              taken: sql<number>`CASE WHEN ${later} THEN 1 ELSE rate_counters.taken + 1 END`,
              window_start: sql<number>`CASE WHEN ${later} THEN excluded.window_start ELSE rate_counters.window_start END`,
            }),
          )
          .returning('taken')
          .executeTakeFirstOrThrow(),
      );
      const taken = Number(row.taken);
      if (taken > limitPerHour) {
        over.add(userId);
        throw refuse(resetSeconds);
      }
      return { remaining: limitPerHour - taken, resetSeconds };
    },
  };
}

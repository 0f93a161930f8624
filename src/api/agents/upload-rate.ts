// How often one user may upload (docs/api.md "Agent upload", "Quota and retention"): every upload request counts,
// refused ones included, against an hourly budget per user, checked before the body is read, so a flood of 5 MiB
// bodies is refused before a byte of them is taken in. 429 rate_limited with Retry-After: the next hour's budget.
// Counted per instance in memory, as the per-address budget is (docs/api.md "Rate limit"), in hours aligned on the
// clock so that a shared store could come later without the instances agreeing on anything but the clock.
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';

export const UPLOAD_RATE_WINDOW_MS = 3_600_000;
/** One a minute on average, in a burst if need be: a developer iterating, or CI on every commit, stays under it. */
export const DEFAULT_UPLOADS_PER_HOUR = 60;

export interface UploadRate {
  /** Counts one upload of `userId`; throws 429 rate_limited (with Retry-After) when it is over the hour's budget. */
  take(userId: string): { remaining: number; resetSeconds: number };
}

export function createUploadRate(limitPerHour: number, clock: Clock): UploadRate {
  let windowStart = 0;
  let counts = new Map<string, number>();
  return {
    take(userId) {
      const now = clock.now();
      const start = now - (now % UPLOAD_RATE_WINDOW_MS);
      // Only the current hour is kept: memory holds this hour's uploaders, however long the service runs.
      if (start !== windowStart) {
        windowStart = start;
        counts = new Map();
      }
      const resetSeconds = Math.max(1, Math.ceil((start + UPLOAD_RATE_WINDOW_MS - now) / 1000));
      if (limitPerHour <= 0) return { remaining: Number.POSITIVE_INFINITY, resetSeconds };
      const count = (counts.get(userId) ?? 0) + 1;
      counts.set(userId, count);
      if (count > limitPerHour) {
        throw new SvcError('rate_limited', `more than ${limitPerHour} uploads an hour by this user`, {
          retryAfterSeconds: resetSeconds,
          remedy: `Wait ${resetSeconds} seconds (Retry-After), then upload again; an unchanged bundle needs no new upload.`,
          extensions: { uploads_per_hour: limitPerHour },
        });
      }
      return { remaining: limitPerHour - count, resetSeconds };
    },
  };
}

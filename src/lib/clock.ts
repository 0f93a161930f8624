/** Milliseconds since the epoch. Logic takes a Clock so tests can pass a real clock that they move forward. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Milliseconds on the host's monotonic clock (CLOCK_MONOTONIC through performance.now): only differences mean
 * anything. Durations a node is given (a lease's seconds) are measured with it, so setting the wall clock, or a
 * host whose clock is minutes off, changes none of them.
 */
export const monotonicClock: Clock = { now: () => performance.now() };

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

export const DAY_MS = 86_400_000;

/** Midnight UTC of the day `nowMs` falls in: the day of daily caps and "today" counts, the same on every host. */
export function startOfUtcDay(nowMs: number): number {
  const date = new Date(nowMs);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

/** Midnight UTC of the day after the one `nowMs` falls in: when a daily cap resets. */
export function startOfNextUtcDay(nowMs: number): number {
  return startOfUtcDay(nowMs) + DAY_MS;
}

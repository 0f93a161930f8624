// The daily cap's day is the UTC day, the same on every host: `list` counts today's spend from its start, and the
// daemon pauses a capped agent until the next one.
export const DAY_MS = 86_400_000;

/** Midnight UTC of the day `nowMs` falls in. */
export function startOfUtcDay(nowMs: number): number {
  const date = new Date(nowMs);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

export function startOfNextUtcDay(nowMs: number): number {
  return startOfUtcDay(nowMs) + DAY_MS;
}

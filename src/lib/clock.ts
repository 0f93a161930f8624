/** Milliseconds since the epoch. Logic takes a Clock so tests can pass a real clock that they move forward. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

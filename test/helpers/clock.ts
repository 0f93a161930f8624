import type { Clock } from '../../src/lib/clock.js';

/** The real clock, moved forward on demand: tests of expiry use it instead of waiting. */
export class MovableClock implements Clock {
  #offsetMs = 0;
  now(): number {
    return Date.now() + this.#offsetMs;
  }
  advance(ms: number): void {
    this.#offsetMs += ms;
  }
}

/**
 * A clock that stands still until advanced: for logic on clock-aligned windows (the rate limit's minute), where
 * the real clock crossing a window boundary mid-test would change the outcome.
 */
export class StoppedClock implements Clock {
  #nowMs: number;
  constructor(nowMs: number) {
    this.#nowMs = nowMs;
  }
  now(): number {
    return this.#nowMs;
  }
  advance(ms: number): void {
    this.#nowMs += ms;
  }
}

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

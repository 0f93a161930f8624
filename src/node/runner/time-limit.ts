// An agent's time limit, counted in time the process that enforces it was running (docs/operations.md "Time limits
// and frozen time"). A process stopped (SIGSTOP, a debugger) has its timers fire late and all at once when it goes on:
// counted as the agent's, that time failed runs `timeout` whose agent had answered meanwhile. A watch ticks every
// WATCH_MS; a gap between two ticks longer than FROZEN_AFTER_MS is time this process was frozen, and moves the
// deadline out by as much, before the agent's exit that waited meanwhile is read. A suspended host needs none of
// this: the monotonic clock the timers run on stops with it.
import { monotonicClock, type Clock } from '../../lib/clock.js';

const WATCH_MS = 250;
/** A tick this late came after a freeze: a busy event loop is never held up this long. */
const FROZEN_AFTER_MS = 1_000;

export interface TimeLimit {
  /** The agent ended: the watch stops. */
  stop(): void;
  /** Time this process was found frozen since the limit started. */
  readonly frozenMs: number;
}

/** Calls `onExpired` once `limitMs` of unfrozen time has passed (within a watch tick), unless stopped first. */
export function startTimeLimit(limitMs: number, onExpired: () => void, clock: Clock = monotonicClock): TimeLimit {
  let deadline = clock.now() + limitMs;
  let last = clock.now();
  let frozenMs = 0;
  const watch = setInterval(() => {
    const now = clock.now();
    const late = now - last - WATCH_MS;
    last = now;
    if (late >= FROZEN_AFTER_MS - WATCH_MS) {
      frozenMs += late;
      deadline += late;
    }
    if (now >= deadline) {
      clearInterval(watch);
      onExpired();
    }
  }, WATCH_MS);
  return {
    stop: () => clearInterval(watch),
    get frozenMs() {
      return frozenMs;
    },
  };
}

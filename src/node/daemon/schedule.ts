// The scheduler's decisions, as pure functions of the schedule rows and the time: when an agent is
// due, when it runs next, whether its daily cap allows one more run (how long to wait before asking again: timing.ts).
import type { ScheduledAgent } from '../store/schedules.js';

export function isPaused(agent: ScheduledAgent): boolean {
  return agent.paused_reason !== null;
}

export function isDue(agent: ScheduledAgent, now: number): boolean {
  return !isPaused(agent) && agent.next_run_at !== null && agent.next_run_at <= now;
}

/** A pause whose time is up: the daemon looks at it again (a balance check, or a new day for the cap). */
export function pauseIsOver(agent: ScheduledAgent, now: number): boolean {
  return isPaused(agent) && agent.paused_until !== null && agent.paused_until <= now;
}

/**
 * The next run counts from the run being started now, never from the old next_run_at: after downtime the missed
 * ticks run once, not in a burst that adds interval after interval until it catches up.
 */
export function nextRunAfter(startedAt: number, everySeconds: number): number {
  return startedAt + everySeconds * 1000;
}

/**
 * Whether one more run fits under the cap for today (the UTC day, as `list` counts it). Runs still pending may yet
 * be charged, so their price counts too: the cap is never exceeded, at worst a run is skipped that would have fit.
 */
export function capAllowsRun(input: { capCents: number | null; spentCents: number; pendingCents: number; priceCents: number }): boolean {
  if (input.capCents === null) return true;
  return input.spentCents + input.pendingCents + input.priceCents <= input.capCents;
}

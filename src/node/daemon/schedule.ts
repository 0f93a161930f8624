// The scheduler's decisions (issue 6 §1), as pure functions of the schedule rows and the time: when an agent is
// due, when it runs next, whether its daily cap allows one more run, how long to wait before asking again.
import { startOfUtcDay } from '../registrations.js';

/** Slow re-checks (balance, outage, unsettled rows) double up to this. */
export const MAX_BACKOFF_MS = 10 * 60_000;
export const DAY_MS = 86_400_000;

/** Why an agent is not run for now; written to schedules.paused_reason. */
export type AgentPauseReason = 'insufficient_balance' | 'daily_cap';

/** A registration with an interval, joined with its schedule row. */
export interface ScheduledAgent {
  agent_id: string;
  every_seconds: number;
  daily_cap_cents: number | null;
  next_run_at: number | null;
  last_run_at: number | null;
  paused_reason: string | null;
  paused_until: number | null;
}

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

export function startOfNextUtcDay(now: number): number {
  return startOfUtcDay(now) + DAY_MS;
}

/** The wait after `previousMs` (none yet: `initialMs`), doubling up to MAX_BACKOFF_MS. */
export function nextBackoff(previousMs: number | undefined, initialMs: number): number {
  if (previousMs === undefined) return Math.min(initialMs, MAX_BACKOFF_MS);
  return Math.min(Math.max(previousMs * 2, initialMs), MAX_BACKOFF_MS);
}

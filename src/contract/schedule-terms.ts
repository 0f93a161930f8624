// The terms of a schedule as plain values (docs/api.md "Schedules"), apart from its schemas (./schedules.ts): the
// CLI's schedule command reads them at start-up, which must not load the schema library (its --help loads no more
// than it prints).
export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'allow', 'cancel_running'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
/** Why a schedule is paused: by its user, or by the service for money or for failed runs (docs/api.md "Schedules"). */
export const PAUSE_REASONS = ['user', 'insufficient_balance', 'budget_exceeded', 'failures', 'creator_revoked', 'node_removed'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];
/** An occurrence that made no run, and why (recorded, charged nothing, coalesced). */
export const SKIP_REASONS = ['missed', 'overlap', 'daily_cap', 'no_node_available', 'agent_not_found', 'invalid_input', 'refused'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** New schedules fire at most once a minute. */
export const MIN_INTERVAL_SECONDS = 60;
export const MAX_INTERVAL_SECONDS = 366 * 86_400;
/** The longest catch-up window: a week. */
export const MAX_CATCH_UP_SECONDS = 7 * 86_400;
export const DEFAULT_CATCH_UP_SECONDS = 0;
export const MAX_PAUSE_AFTER_FAILURES = 1000;
/** Schedules one user may keep. */
export const MAX_SCHEDULES_PER_USER = 200;
export const MAX_CRON_CHARS = 120;
export const MAX_TIME_ZONE_CHARS = 64;

/** Most occurrences one backfill may run; more than BACKFILL_CONFIRM_OVER need `confirm_runs` equal to their count. */
export const MAX_BACKFILL_RUNS = 1000;
export const BACKFILL_CONFIRM_OVER = 10;

/** What a schedule costs at most a day and over 30 days (docs/api.md "Schedules"), each day held to its cap. */
export interface ScheduleCost {
  runs_per_day: number;
  per_day_cents: number;
  runs_per_month: number;
  per_month_cents: number;
}

const DAY_SECONDS = 86_400;
/** The month a cost is shown for. */
export const COST_MONTH_DAYS = 30;

/**
 * An interval's cost, by arithmetic: the runs a day and in 30 days, each day held to the daily cap. The one source
 * for the service's schedules, `register --every` and the wizard.
 */
export function intervalCost(everySeconds: number, priceCents: number, dailyCapCents: number | null): ScheduleCost {
  const day = Math.floor(DAY_SECONDS / everySeconds);
  const month = Math.floor((COST_MONTH_DAYS * DAY_SECONDS) / everySeconds);
  const held = (cents: number, cap: number | null): number => (cap === null ? cents : Math.min(cents, cap));
  return {
    runs_per_day: day,
    per_day_cents: held(day * priceCents, dailyCapCents),
    runs_per_month: month,
    per_month_cents: held(month * priceCents, dailyCapCents === null ? null : dailyCapCents * COST_MONTH_DAYS),
  };
}

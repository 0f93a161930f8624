// When a schedule fires (docs/api.md "Schedules"), as pure functions of the time given: the tests drive them and the
// scheduler with a clock of their own. Cron expressions are croner's (5 fields, or @hourly-style names), in the
// schedule's IANA time zone: a local time that does not exist fires at the first instant after the gap, a repeated
// one once, at its first occurrence (docs/decisions/0037-schedules-at-the-service.md). An interval counts from the
// schedule's anchor, its first fire time, in absolute time.
import { Cron } from 'croner';
import { SvcError } from '../../contract/errors.js';

export interface Timing {
  cron: string | null;
  intervalSeconds: number | null;
  timeZone: string;
  /** An interval's first fire time (ms); the others follow it every interval. */
  anchorAt: number;
}

/**
 * How late the scheduler may first see an occurrence and still fire it as on time: past this it was missed (the
 * service was down), and only the catch-up window fires it.
 */
export const ON_TIME_GRACE_MS = 30_000;
/** The most past occurrences one round walks over to count the missed ones. */
const MAX_WALK = 100_000;

const NAMES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

function invalid(message: string, path: string, remedy: string): SvcError {
  return new SvcError('invalid_schedule', message, { remedy, extensions: { errors: [{ path, message }] } });
}

/** The expression as stored (spaces collapsed), or 400 invalid_schedule. */
export function checkCron(expression: string): string {
  const trimmed = expression.trim().replace(/\s+/g, ' ');
  const remedy =
    'Give 5 fields (minute hour day-of-month month day-of-week), for example "30 2 * * *", or one of @hourly, @daily, @weekly, @monthly, @yearly.';
  if (trimmed.startsWith('@')) {
    if (!NAMES.has(trimmed.toLowerCase()))
      throw invalid(`cron ${JSON.stringify(trimmed.slice(0, 40))} is no name cron knows`, '/cron', remedy);
    return trimmed.toLowerCase() === '@midnight' ? '@daily' : trimmed.toLowerCase();
  }
  const fields = trimmed.split(' ');
  if (fields.length !== 5) throw invalid(`cron must have 5 fields, not ${fields.length}`, '/cron', remedy);
  try {
    new Cron(trimmed, { paused: true });
  } catch (error) {
    throw invalid(`cron ${JSON.stringify(trimmed)} is not valid: ${(error as Error).message}`, '/cron', remedy);
  }
  return trimmed;
}

/** The zone as given when it is one of the IANA database's, or 400 invalid_schedule. */
export function checkTimeZone(zone: string): string {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    throw invalid(
      `time_zone ${JSON.stringify(zone.slice(0, 64))} is not an IANA time zone`,
      '/time_zone',
      'Name a zone of the IANA database, for example Europe/Berlin or UTC.',
    );
  }
  return zone;
}

/** The first fire time strictly after `afterMs`; null when a cron never fires again (a date gone by). */
export function nextFireAfter(timing: Timing, afterMs: number): number | null {
  if (timing.intervalSeconds !== null) {
    const every = timing.intervalSeconds * 1000;
    if (afterMs < timing.anchorAt) return timing.anchorAt;
    return timing.anchorAt + (Math.floor((afterMs - timing.anchorAt) / every) + 1) * every;
  }
  const next = new Cron(timing.cron!, { paused: true, timezone: timing.timeZone }).nextRun(new Date(afterMs));
  return next === null ? null : next.getTime();
}

/** The next `count` fire times strictly after `afterMs`. */
export function fireTimesAfter(timing: Timing, afterMs: number, count: number): number[] {
  const times: number[] = [];
  let at = afterMs;
  while (times.length < count) {
    const next = nextFireAfter(timing, at);
    if (next === null) break;
    times.push(next);
    at = next;
  }
  return times;
}

/** What one scheduler round does with a schedule whose next fire time has come. */
export interface Due {
  /** The occurrence to run: the latest due one that is on time or inside the catch-up window; null: none. */
  fireAt: number | null;
  /** The due occurrences that make no run (missed, or coalesced into fireAt), and the first and last of them. */
  missed: { count: number; firstAt: number; lastAt: number } | null;
  /** The first fire time after `now`: where the schedule goes next. */
  nextFireAt: number | null;
}

/**
 * The occurrences from `nextFireAt` to `now`: those inside max(catch-up window, ON_TIME_GRACE_MS) of `now` coalesce
 * into one run, at the latest of them (as the daemon's missed ticks do); the others are missed. A catch-up of 0 thus
 * fires only what is on time.
 */
export function dueAt(timing: Timing, nextFireAt: number, now: number, catchUpSeconds: number): Due {
  if (nextFireAt > now) return { fireAt: null, missed: null, nextFireAt };
  const windowStart = now - Math.max(catchUpSeconds * 1000, ON_TIME_GRACE_MS);
  let count = 0;
  let latest = nextFireAt;
  let before = nextFireAt;
  if (timing.intervalSeconds !== null) {
    const every = timing.intervalSeconds * 1000;
    count = Math.floor((now - nextFireAt) / every) + 1;
    latest = nextFireAt + (count - 1) * every;
    before = latest - every;
  } else {
    for (let at: number | null = nextFireAt; at !== null && at <= now && count < MAX_WALK; at = nextFireAfter(timing, at)) {
      count += 1;
      before = latest;
      latest = at;
    }
  }
  const fireAt = latest >= windowStart ? latest : null;
  const skipped = fireAt === null ? count : count - 1;
  const lastSkipped = fireAt === null ? latest : before;
  return {
    fireAt,
    missed: skipped > 0 ? { count: skipped, firstAt: nextFireAt, lastAt: lastSkipped } : null,
    nextFireAt: nextFireAfter(timing, now),
  };
}

/** The calendar day `ms` falls on in `zone`, as YYYY-MM-DD: the day a schedule's daily cap counts. */
export function localDay(ms: number, zone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ms));
}

/** The IANA time zone database the process computes local times with. */
export function tzVersion(): string {
  return process.versions.tz ?? 'unknown';
}

/** What a schedule costs at most, from its own fire times after `now` (docs/api.md "Schedules"). */
export interface ScheduleCost {
  runs_per_day: number;
  per_day_cents: number;
  runs_per_month: number;
  per_month_cents: number;
}

const DAY_MS = 86_400_000;
/** Fire times walked at most: a cron more frequent than this a month is counted as 30 of its next 24 h. */
const MAX_COUNTED = 2_000;

/**
 * The runs of the next 24 h and the next 30 days, and their price, each day held to the daily cap: an interval by
 * arithmetic, a cron by walking its fire times (when it fires more than MAX_COUNTED times in 30 days, the month is 30
 * of its next 24 h, which every cron that frequent repeats but for a changeover day).
 */
export function costOf(timing: Timing, now: number, priceCents: number, dailyCapCents: number | null): ScheduleCost {
  let day: number;
  let month: number;
  if (timing.intervalSeconds !== null) {
    day = Math.floor(DAY_MS / (timing.intervalSeconds * 1000));
    month = Math.floor((30 * DAY_MS) / (timing.intervalSeconds * 1000));
  } else {
    const times = fireTimesAfter(timing, now, MAX_COUNTED);
    day = times.filter((at) => at <= now + DAY_MS).length;
    const covered = times.length < MAX_COUNTED || times[times.length - 1]! > now + 30 * DAY_MS;
    month = covered ? times.filter((at) => at <= now + 30 * DAY_MS).length : day * 30;
  }
  const perDay = dailyCapCents === null ? day * priceCents : Math.min(day * priceCents, dailyCapCents);
  const perMonth = dailyCapCents === null ? month * priceCents : Math.min(month * priceCents, dailyCapCents * 30);
  return { runs_per_day: day, per_day_cents: perDay, runs_per_month: month, per_month_cents: perMonth };
}

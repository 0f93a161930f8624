// When a schedule fires (docs/api.md "Schedules"), as pure functions of the time given: the tests drive them and the
// scheduler with a clock of their own. Cron expressions are croner's (5 fields, or @hourly-style names), in the
// schedule's IANA time zone: a local time that does not exist fires at the first instant after the gap, a repeated
// one once, at its first occurrence (docs/decisions/0037-schedules-at-the-service.md). An interval counts from the
// schedule's anchor, its first fire time, in absolute time.
import { Cron } from 'croner';
import { SvcError } from '../../contract/errors.js';
import { DAY_MS } from '../../lib/clock.js';
import { COST_MONTH_DAYS, intervalCost, type ScheduleCost } from '../../contract/schedule-terms.js';

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
/**
 * The most past occurrences one round walks over one by one (croner takes up to 150 µs each in a zone); past them, the
 * missed ones are counted by the day, so a minutely cron after a month away costs a round milliseconds, not minutes.
 */
const MAX_WALK = 60;

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
    ({ count, latest, before } = cronDue(timing, nextFireAt, now));
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

/** A cron's occurrences from `nextFireAt` to `now`: how many, the latest, and the one before it. */
function cronDue(timing: Timing, nextFireAt: number, now: number): { count: number; latest: number; before: number } {
  let count = 0;
  let latest = nextFireAt;
  let before = nextFireAt;
  for (let at: number | null = nextFireAt; at !== null && at <= now; at = nextFireAfter(timing, at)) {
    if (count === MAX_WALK) {
      const full = new Cron(timing.cron!, { paused: true, timezone: timing.timeZone });
      const [last, previous] = full.previousRuns(2, new Date(now + 1)).map((date) => date.getTime());
      const counted = cronRunsByDay(timing, nextFireAt - 1, now).reduce((sum, runs) => sum + runs, 0);
      return { count: Math.max(counted, MAX_WALK + 1), latest: last!, before: previous ?? nextFireAt };
    }
    count += 1;
    before = latest;
    latest = at;
  }
  return { count, latest, before };
}

/**
 * One formatter a zone: making an Intl.DateTimeFormat took 0.16 ms, a tenth of the CPU a burst of occurrences spent
 * each (docs/operations.md "Benchmarks", bench:scheduler); a format with one made is a few microseconds.
 */
const dayFormats = new Map<string, Intl.DateTimeFormat>();

/** The calendar day `ms` falls on in `zone`, as YYYY-MM-DD: the day a schedule's daily cap counts. */
export function localDay(ms: number, zone: string): string {
  let format = dayFormats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(zone, format);
  }
  return format.format(new Date(ms));
}

/** The IANA time zone database the process computes local times with. */
export function tzVersion(): string {
  return process.versions.tz ?? 'unknown';
}

/** The names as the fields they stand for (croner's meaning): their minute and hour are what a day of them holds. */
const NAMED_FIELDS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** Minutes of the day a (minute, hour) pair fires at, worked out once a pair: walking a day takes croner up to 40 ms. */
const minutesOfDayCache = new Map<string, number[]>();

/**
 * The minutes of the local day a cron fires at on a day it fires: its minute and hour fields do not depend on the day,
 * so every such day has the same ones (but for a changeover day, which has no more). Walked over one day at UTC+0.
 */
function minutesOfDay(expression: string): number[] {
  const [minute, hour] = (NAMED_FIELDS[expression] ?? expression).split(' ');
  const key = `${minute} ${hour}`;
  const cached = minutesOfDayCache.get(key);
  if (cached !== undefined) return cached;
  const dayPattern = new Cron(`${key} * * *`, { paused: true, utcOffset: 0 });
  const start = Date.UTC(2001, 0, 1);
  const minutes: number[] = [];
  for (let at = dayPattern.nextRun(new Date(start - 1)); at !== null && at.getTime() < start + DAY_MS; at = dayPattern.nextRun(at))
    minutes.push((at.getTime() - start) / 60_000);
  if (minutesOfDayCache.size >= 1000) minutesOfDayCache.clear();
  minutesOfDayCache.set(key, minutes);
  return minutes;
}

const clockFormats = new Map<string, Intl.DateTimeFormat>();

/** The minute of the local day `ms` falls in, in `zone`. */
function minuteOfDay(ms: number, zone: string): number {
  let format = clockFormats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    clockFormats.set(zone, format);
  }
  const parts = format.formatToParts(new Date(ms));
  const part = (type: string): number => Number(parts.find((p) => p.type === type)!.value);
  return part('hour') * 60 + part('minute');
}

/** The zone's offset from UTC at `ms`, in minutes (mod a day). */
function utcOffset(ms: number, zone: string): number {
  const utcMinute = Math.floor((ms % DAY_MS) / 60_000);
  return (minuteOfDay(ms, zone) - utcMinute + 24 * 60) % (24 * 60);
}

/** The first instant of the local day after the one `ms` falls on, found by bisection: a local day lasts 23 to 25 h. */
function nextLocalDayStart(ms: number, zone: string): number {
  const day = localDay(ms, zone);
  let before = ms;
  let after = ms + 27 * 3_600_000;
  while (after - before > 1) {
    const middle = Math.floor((before + after) / 2);
    if (localDay(middle, zone) === day) before = middle;
    else after = middle;
  }
  return after;
}

/** The runs a cron makes on each local day of its zone it fires on in (`now`, `end`], the two ends' days in part. */
function cronRunsByDay(timing: Timing, now: number, end: number): number[] {
  const expression = timing.cron!;
  const minutes = minutesOfDay(expression);
  const full = new Cron(expression, { paused: true, timezone: timing.timeZone });
  const [today, lastDay] = [localDay(now, timing.timeZone), localDay(end, timing.timeZone)];
  const runs: number[] = [];
  for (let at = full.nextRun(new Date(now)); at !== null && at.getTime() <= end;) {
    const first = at.getTime();
    const day = localDay(first, timing.timeZone);
    const dayEnd = nextLocalDayStart(first, timing.timeZone);
    if (utcOffset(dayEnd - 1, timing.timeZone) !== utcOffset(dayEnd - 23 * 3_600_000, timing.timeZone)) {
      // A changeover day: an hour of its minutes is not there, or comes twice and fires once. Walked one by one.
      let count = 0;
      for (let t: number | null = first; t !== null && t < dayEnd && t <= end; t = nextFireAfter(timing, t)) count += 1;
      runs.push(count);
    } else {
      const after = day === today ? minuteOfDay(now, timing.timeZone) : -1;
      const upTo = day === lastDay ? minuteOfDay(end, timing.timeZone) : 24 * 60;
      runs.push(minutes.filter((m) => m > after && m <= upTo).length);
    }
    at = full.nextRun(new Date(dayEnd - 1));
  }
  return runs;
}

/**
 * The most one day of the next 30 costs, and the next 30 days' cost, each local day of the schedule's zone held to the
 * daily cap: an interval by arithmetic; a cron from the days it fires on and the minutes it fires at on them, so a
 * weekday cron asked on a Saturday is priced as on a Monday.
 */
export function costOf(timing: Timing, now: number, priceCents: number, dailyCapCents: number | null): ScheduleCost {
  const held = (runs: number): number => (dailyCapCents === null ? runs * priceCents : Math.min(runs * priceCents, dailyCapCents));
  if (timing.intervalSeconds !== null) return intervalCost(timing.intervalSeconds, priceCents, dailyCapCents);
  const byDay = cronRunsByDay(timing, now, now + COST_MONTH_DAYS * DAY_MS);
  const busiest = Math.max(0, ...byDay);
  return {
    runs_per_day: busiest,
    per_day_cents: held(busiest),
    runs_per_month: byDay.reduce((sum, runs) => sum + runs, 0),
    per_month_cents: byDay.reduce((sum, runs) => sum + held(runs), 0),
  };
}

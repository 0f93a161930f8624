// What a schedule is shown to cost (docs/api.md "Schedules"): from its own fire times, each local day of its zone held
// to the daily cap, whatever day of the week it is asked on.
import { describe, expect, it } from 'vitest';
import { costOf, dueAt, nextFireAfter, type Timing } from '../../src/api/schedules/fire-times.js';

const cron = (expression: string, timeZone = 'UTC'): Timing => ({ cron: expression, intervalSeconds: null, timeZone, anchorAt: 0 });
const SATURDAY = Date.parse('2027-01-02T12:00:00Z');
const MONDAY = Date.parse('2027-01-04T12:00:00Z');

describe('a schedule’s cost', () => {
  it('prices a weekday cron asked on a Saturday as on a Monday: the busiest day, and the month’s weekdays', () => {
    const weekdays = cron('*/2 * * * 1-5');
    const onSaturday = costOf(weekdays, SATURDAY, 4, null);
    const onMonday = costOf(weekdays, MONDAY, 4, null);
    expect([onSaturday.runs_per_day, onSaturday.per_day_cents]).toEqual([720, 2880]);
    expect([onMonday.runs_per_day, onMonday.per_day_cents]).toEqual([720, 2880]);
    // 30 days from Saturday 2027-01-02 noon: 20 weekdays and the morning of Monday 2027-02-01. From Monday 2027-01-04
    // noon: its afternoon, 21 weekdays and the morning of Wednesday 2027-02-03. The window is (now, now + 30 days]:
    // an afternoon after noon has 359 runs, a morning to noon 361.
    expect(onSaturday.runs_per_month).toBe(20 * 720 + 361);
    expect(onMonday.runs_per_month).toBe(359 + 21 * 720 + 361);
  });

  it('holds each local day to the cap, and leaves the days it does not fire at nothing', () => {
    const weekdays = cron('*/2 * * * 1-5', 'Europe/Berlin');
    const capped = costOf(weekdays, SATURDAY, 4, 100);
    expect(capped.per_day_cents).toBe(100);
    // 20 weekdays at the cap, and the 21st's morning (13 Berlin hours of 30 runs an hour, more than the cap).
    expect(capped.per_month_cents).toBe(21 * 100);
  });

  it('counts a sparse cron exactly', () => {
    const mondays = cron('30 9 * * 1', 'America/New_York');
    expect(costOf(mondays, SATURDAY, 15, null)).toEqual({ runs_per_day: 1, per_day_cents: 15, runs_per_month: 4, per_month_cents: 60 });
  });

  it('prices an interval by arithmetic, each day to its cap', () => {
    const every5m: Timing = { cron: null, intervalSeconds: 300, timeZone: 'UTC', anchorAt: 0 };
    expect(costOf(every5m, MONDAY, 4, 100)).toEqual({ runs_per_day: 288, per_day_cents: 100, runs_per_month: 8640, per_month_cents: 3000 });
  });
});

describe('a round after the service was away', () => {
  const walked = (timing: Timing, from: number, to: number): number[] => {
    const times: number[] = [];
    for (let at = nextFireAfter(timing, from - 1); at !== null && at <= to; at = nextFireAfter(timing, at)) times.push(at);
    return times;
  };

  it('counts the missed occurrences of a long absence by the day as one by one, changeover days included', () => {
    for (const [expression, zone] of [
      ['*/20 * * * *', 'Europe/Berlin'],
      ['15 1-3 * * *', 'Europe/Berlin'],
      ['0 */2 * * 1-5', 'America/New_York'],
      ['@hourly', 'Australia/Lord_Howe'],
    ] as const) {
      const timing = cron(expression, zone);
      for (const [from, to] of [
        ['2027-03-20T10:07:00Z', '2027-04-05T08:31:10Z'],
        ['2027-10-25T00:00:00Z', '2027-11-10T23:59:00Z'],
      ] as const) {
        const first = nextFireAfter(timing, Date.parse(from))!;
        const now = Date.parse(to);
        const times = walked(timing, first, now);
        const due = dueAt(timing, first, now, 0);
        expect({ expression, zone, from, due }).toEqual({
          expression,
          zone,
          from,
          due: {
            fireAt: times.at(-1)! >= now - 30_000 ? times.at(-1)! : null,
            missed: expect.objectContaining({ count: times.at(-1)! >= now - 30_000 ? times.length - 1 : times.length, firstAt: first }),
            nextFireAt: nextFireAfter(timing, now),
          },
        });
      }
    }
  });

  it('fires the latest of a minutely cron a month away, and counts the rest missed, in one quick round', () => {
    const minutely = cron('* * * * *', 'Europe/Berlin');
    const away = Date.parse('2027-03-01T00:00:00Z');
    const now = Date.parse('2027-03-31T00:00:10Z');
    expect(dueAt(minutely, away, now, 0)).toEqual({
      fireAt: now - 10_000,
      missed: { count: 30 * 1440, firstAt: away, lastAt: now - 70_000 },
      nextFireAt: now + 50_000,
    });
  });
});

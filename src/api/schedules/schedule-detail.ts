// A schedule as `show` answers it (docs/api.md "Schedules"), for the API and the console alike: its next five fire
// times from now, the tz database, its price and cost a day and a month, its coalesced skips and last occurrences.
import type { ScheduleDetail } from '../../contract/schedules.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import { costOf, fireTimesAfter, tzVersion } from './fire-times.js';
import type { ScheduleChanges } from './schedule-changes.js';
import { scheduleView, timingOf, type ScheduleRow } from './schedule-store.js';

const SHOWN = 5;

export function createScheduleDetail(ctx: ServiceContext, changes: ScheduleChanges): (row: ScheduleRow) => Promise<ScheduleDetail> {
  const { rows } = changes;
  return async (row: ScheduleRow): Promise<ScheduleDetail> => {
    // An occurrence overdue is the next round's to fire or to count missed: what is shown starts from now.
    const now = ctx.clock.now();
    const from = row.next_fire_at === null ? now : Math.max(row.next_fire_at - 1, now);
    const price = await changes.prices.agentFor(row.user_id, row.agent_id).then(
      (agent) => agent.price_cents,
      () => 0,
    );
    return {
      ...scheduleView(row),
      next_fire_times: fireTimesAfter(timingOf(row), from, SHOWN).map(isoTime),
      tz_version: tzVersion(),
      price_cents: price,
      cost: costOf(timingOf(row), now, price, row.daily_cap_cents),
      skips: await rows.skips.latest(row.schedule_id, 20),
      occurrences: (await rows.occurrences.latest(row.schedule_id, 20)).map((o) => ({
        fire_at: isoTime(o.fire_at),
        run_id: o.run_id,
        state: o.state,
      })),
    };
  };
}

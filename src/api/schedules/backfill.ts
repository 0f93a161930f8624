// Backfill (docs/api.md "Schedules"): the schedule's occurrences in a past range that made no run are run now, each
// under its own key (schedule, fire time), so an occurrence that has a run is never run again, however old the range
// (the keys are kept for the schedule's life). What it would run and cost is said first; over BACKFILL_CONFIRM_OVER
// runs it needs `confirm_runs` equal to that count. The runs go through execute's path under the user's budgets, and
// each day's runs are held to the schedule's cap; the overlap policy is not applied to them (they are asked for).
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { BACKFILL_CONFIRM_OVER, MAX_BACKFILL_RUNS, type BackfillRequest, type BackfillResponse } from '../../contract/schedules.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import { fireTimesAfter, localDay } from './fire-times.js';
import { auditedCredential, createScheduleChanges } from './schedule-changes.js';
import { timingOf } from './schedule-store.js';
import { createScheduler } from './scheduler.js';

function badRange(message: string): SvcError {
  return new SvcError('invalid_schedule', message, {
    remedy: `Give from and to as ISO times, from before to, to not after now, with at most ${MAX_BACKFILL_RUNS} occurrences between.`,
    extensions: { errors: [{ path: '/from', message }] },
  });
}

export function createBackfill(ctx: ServiceContext) {
  const changes = createScheduleChanges(ctx);
  const scheduler = createScheduler(ctx);
  const { rows } = changes;

  return async (claims: AccessTokenClaims, scheduleId: string, body: BackfillRequest, client: ClientSeen): Promise<BackfillResponse> => {
    const now = ctx.clock.now();
    const from = Date.parse(body.from);
    const to = Date.parse(body.to);
    if (Number.isNaN(from) || Number.isNaN(to)) throw badRange('from and to must be ISO 8601 times');
    if (!(from < to)) throw badRange('from must be before to');
    if (to > now) throw badRange('to must not be after now: occurrences to come are the scheduler’s');
    const schedule = await changes.scheduleOf(claims.sub, scheduleId);
    // Fire times in [from, to]: one more than the bound tells a range too long.
    const times = fireTimesAfter(timingOf(schedule), from - 1, MAX_BACKFILL_RUNS + 1).filter((at) => at <= to);
    if (times.length > MAX_BACKFILL_RUNS) throw badRange(`the range holds more than ${MAX_BACKFILL_RUNS} occurrences`);
    const known = new Map((await rows.occurrences.inRange(scheduleId, from, to)).map((o) => [o.fire_at, o.state]));
    // An occurrence skipped (by the policy, the cap, a refusal) made no run: backfill may run it; one with a run, never.
    const toRun = times.filter((at) => known.get(at) === undefined || known.get(at) === 'skipped');
    const price = (await changes.prices.agentFor(schedule.user_id, schedule.agent_id)).price_cents;
    const answer = (occurrences: BackfillResponse['occurrences'], dryRun: boolean): BackfillResponse => ({
      schedule_id: scheduleId,
      runs: toRun.length,
      cost_cents: toRun.length * price,
      already_run: times.length - toRun.length,
      dry_run: dryRun,
      occurrences,
    });
    if (body.dry_run === true) return answer([], true);
    if (toRun.length > BACKFILL_CONFIRM_OVER && body.confirm_runs !== toRun.length) {
      throw new SvcError(
        'backfill_unconfirmed',
        `this backfill runs ${toRun.length} occurrences for up to ${formatDollars(toRun.length * price)}; over ${BACKFILL_CONFIRM_OVER} it needs confirm_runs: ${toRun.length}`,
        { extensions: { runs: toRun.length, cost_cents: toRun.length * price, confirm_over: BACKFILL_CONFIRM_OVER } },
      );
    }
    await ctx.audit.record(claims.sub, 'schedule_changed', client, {
      schedule_id: scheduleId,
      change: 'backfilled',
      from: isoTime(from),
      to: isoTime(to),
      runs: toRun.length,
      ...auditedCredential(claims),
    });
    const done: BackfillResponse['occurrences'] = [];
    for (const fireAt of toRun) {
      const day = localDay(fireAt, schedule.time_zone);
      const claimed = await ctx.store.transaction(async () => {
        const locked = await rows.schedules.getForUpdate(scheduleId);
        if (locked === undefined) return 'gone';
        const overCap =
          locked.daily_cap_cents !== null && (await rows.occurrences.spentOn(scheduleId, day)) + price > locked.daily_cap_cents;
        const state = overCap ? 'skipped' : 'pending';
        const row = {
          schedule_id: scheduleId,
          fire_at: fireAt,
          state,
          run_id: null,
          price_cents: price,
          local_day: day,
          claimed_at: now,
        } as const;
        const taken =
          (await rows.occurrences.claim(row)) ||
          (await rows.occurrences.set(scheduleId, fireAt, { state, price_cents: price, claimed_at: now }, 'skipped'));
        if (!taken) return 'taken';
        if (overCap) await rows.skips.record(scheduleId, 'daily_cap', 'backfill', { count: 1, firstAt: fireAt, lastAt: fireAt });
        return overCap ? 'over_cap' : 'claimed';
      });
      if (claimed === 'gone') break;
      if (claimed === 'claimed') await scheduler.startRun(schedule, { fire_at: fireAt });
      const after = (await rows.occurrences.inRange(scheduleId, fireAt, fireAt))[0];
      done.push({ fire_at: isoTime(fireAt), run_id: after?.run_id ?? null, state: after?.state ?? 'skipped' });
      // Refused for money: the schedule is paused, and the backfill stops there.
      const now2 = await rows.schedules.get(scheduleId);
      if (now2 !== undefined && now2.paused === 1 && now2.pause_reason !== schedule.pause_reason) break;
    }
    return answer(done, false);
  };
}

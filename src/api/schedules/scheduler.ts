// The scheduler inside svc-api (docs/api.md "Schedules"; docs/decisions/0037-schedules-at-the-service.md). Each
// round, by the service's clock: the schedules whose next fire time has come each claim their occurrence under the
// schedule's row lock, keyed by (schedule, fire time) with a primary key kept for the schedule's life, so however
// many instances run rounds on one database, one of them makes the occurrence's run. The run is started through
// execute's own path (runs/start-run.ts: the user's wallet, budgets, one charge) with an Idempotency-Key of the
// occurrence, so a retried start of a claimed occurrence finds its run instead of making a second.
import { SvcError } from '../../contract/errors.js';
import type { OverlapPolicy } from '../../contract/schedules.js';
import { createBudgetCheck } from '../budgets/budget-check.js';
import { createBudgetStore } from '../budgets/budget-store.js';
import { repeatInBackground, runInBackground, type ServiceContext, type WakeIn } from '../context.js';
import { recordScheduleEvent, stateOf } from './schedule-events.js';
import { schedulesPausedMail } from './schedule-mail.js';
import { createRunCanceller } from '../runs/cancel-run.js';
import { createRuns } from '../runs/runs.js';
import { createScheduleChanges } from './schedule-changes.js';
import { dueAt, localDay, nextFireAfter } from './fire-times.js';
import { timingOf, type OccurrenceRow, type ScheduleRow } from './schedule-store.js';

/** How often a schedule paused for money looks again whether a run would be covered (the daemon's pace). */
export const MONEY_RECHECK_MS = 60_000;
/** A claimed occurrence whose run was not started by then (its instance stopped meanwhile) is started again. */
export const PENDING_RETRY_MS = 30_000;
/** Schedules one round takes at most; a full batch comes again at once. */
const BATCH = 200;
/** Due schedules fired at once within a round. */
const FIRE_CONCURRENCY = 16;
const MONEY_REASONS = new Set(['insufficient_balance', 'budget_exceeded']);

export type Scheduler = ReturnType<typeof createScheduler>;

export function createScheduler(ctx: ServiceContext) {
  const runs = createRuns(ctx);
  const changes = createScheduleChanges(ctx);
  const { rows, prices } = changes;
  const budgets = createBudgetCheck(createBudgetStore(ctx.store, ctx.clock));
  const cancel = createRunCanceller(ctx, runs.store, runs.finish);
  const keyOf = (scheduleId: string, fireAt: number) => `schedule-${scheduleId}-${fireAt}`;

  /**
   * One more skip, coalesced; a new record is a change of state, told once (schedule.skipping). A refusal for money
   * pauses the schedule, and its schedule.paused is the one event.
   */
  const skip = async (
    schedule: ScheduleRow,
    reason: string,
    detail: string | null,
    times: { count: number; firstAt: number; lastAt: number },
  ) => {
    if ((await rows.skips.record(schedule.schedule_id, reason, detail, times)) && !MONEY_REASONS.has(reason)) {
      const now = ctx.clock.now();
      const current = (await rows.schedules.get(schedule.schedule_id)) ?? schedule;
      await recordScheduleEvent(ctx.store, now, 'schedule.skipping', stateOf(current), { reason, ...times });
    }
  };
  const tellState = async (scheduleId: string): Promise<void> => {
    const current = await rows.schedules.get(scheduleId);
    if (current !== undefined)
      await recordScheduleEvent(
        ctx.store,
        ctx.clock.now(),
        current.paused === 1 ? 'schedule.paused' : 'schedule.resumed',
        stateOf(current),
      );
  };

  /** Starts the claimed occurrence's run; its refusals are recorded, those for money pause the schedule. */
  const startRun = async (schedule: ScheduleRow, occurrence: Pick<OccurrenceRow, 'fire_at'>): Promise<void> => {
    const one = { count: 1, firstAt: occurrence.fire_at, lastAt: occurrence.fire_at };
    const labels = JSON.parse(schedule.labels_json) as string[];
    try {
      const started = await runs.start({
        caller: { kind: 'user', sub: schedule.user_id },
        // The service's own schedule started it (docs/api.md "Triggers").
        trigger: 'schedule',
        request: {
          user_id: schedule.user_id,
          agent_id: schedule.agent_id,
          ...(schedule.input_json === null ? {} : { input: JSON.parse(schedule.input_json) as Record<string, unknown> }),
          ...(schedule.node_id === null ? {} : { node_id: schedule.node_id }),
          ...(labels.length === 0 ? {} : { labels }),
        },
        idempotencyKey: keyOf(schedule.schedule_id, occurrence.fire_at),
      });
      const runId = started.kind === 'replay' ? (JSON.parse(started.json) as { run_id?: string }).run_id : started.run.run_id;
      await ctx.store.transaction(async () => {
        await rows.occurrences.set(schedule.schedule_id, occurrence.fire_at, { state: 'started', run_id: runId ?? null });
        await rows.skips.close(schedule.schedule_id);
      });
      if (started.kind === 'started') ctx.runEvents.queued(schedule.user_id);
    } catch (error) {
      if (!(error instanceof SvcError)) throw error;
      await ctx.store.transaction(async () => {
        await rows.occurrences.set(schedule.schedule_id, occurrence.fire_at, { state: 'skipped' });
        if (MONEY_REASONS.has(error.code)) {
          // At the first refusal: the schedule stops asking, and looks again now and then whether a run is covered.
          await rows.schedules.update(schedule.schedule_id, {
            paused: 1,
            pause_reason: error.code,
            next_fire_at: null,
            recheck_at: ctx.clock.now() + MONEY_RECHECK_MS,
            updated_at: ctx.clock.now(),
          });
          await tellState(schedule.schedule_id);
        }
        const reason = MONEY_REASONS.has(error.code) ? error.code : error.code === 'no_node_available' ? 'no_node_available' : 'refused';
        await skip(schedule, reason, error.message.slice(0, 500), one);
      });
      // The first refusal paused it, so no other occurrence fires to mail again: one mail a pause.
      if (MONEY_REASONS.has(error.code))
        runInBackground(ctx, ctx.mailer.send(schedulesPausedMail(schedule.user_id, [schedule.schedule_id], error.code, ctx.clock.now())));
    }
  };

  /** What the overlap policy makes of an occurrence while the schedule's earlier runs are still queued or running. */
  const overlapVerdict = async (schedule: ScheduleRow): Promise<{ state: 'pending' | 'buffered' | 'skip'; cancel: string[] }> => {
    // Nothing to look up (bench:scheduler: the lookup was a tenth of the CPU an occurrence of a burst took).
    if (schedule.overlap === 'allow') return { state: 'pending', cancel: [] };
    const active = await rows.occurrences.active(schedule.schedule_id);
    const busy = active.queued.length + active.running.length + active.waiting + active.buffered;
    switch (schedule.overlap as OverlapPolicy) {
      case 'cancel_running':
        return { state: 'pending', cancel: [...active.queued, ...active.running] };
      case 'buffer_one':
        // One run goes on and one waits behind it; a run that has not started yet is the one waiting.
        if (active.buffered + active.waiting + active.queued.length > 0) return { state: 'skip', cancel: [] };
        return { state: active.running.length > 0 ? 'buffered' : 'pending', cancel: [] };
      default:
        return { state: busy > 0 ? 'skip' : 'pending', cancel: [] };
    }
  };

  /** One due schedule, under its row lock: claims the occurrence, or records why it makes no run. */
  const fire = async (scheduleId: string, now: number): Promise<{ schedule: ScheduleRow; fireAt: number; cancel: string[] } | undefined> =>
    ctx.store.transaction(async () => {
      const schedule = await rows.schedules.getForUpdate(scheduleId);
      if (schedule === undefined || schedule.paused === 1 || schedule.next_fire_at === null || schedule.next_fire_at > now)
        return undefined;
      const due = dueAt(timingOf(schedule), schedule.next_fire_at, now, schedule.catch_up_seconds);
      await rows.schedules.update(scheduleId, { next_fire_at: due.nextFireAt });
      if (due.missed !== null) await skip(schedule, 'missed', null, due.missed);
      if (due.fireAt === null) return undefined;
      const one = { count: 1, firstAt: due.fireAt, lastAt: due.fireAt };
      const day = localDay(due.fireAt, schedule.time_zone);
      let price = 0;
      try {
        price = (await prices.agentFor(schedule.user_id, schedule.agent_id)).price_cents;
      } catch (error) {
        if (!(error instanceof SvcError)) throw error;
        await rows.occurrences.claim({
          schedule_id: scheduleId,
          fire_at: due.fireAt,
          state: 'skipped',
          run_id: null,
          price_cents: 0,
          local_day: day,
          claimed_at: now,
        });
        await skip(schedule, 'agent_not_found', error.message, one);
        return undefined;
      }
      const verdict = await overlapVerdict(schedule);
      // Runs queued and not yet finished count against the cap (their price), so it is never passed.
      const overCap =
        schedule.daily_cap_cents !== null && (await rows.occurrences.spentOn(scheduleId, day)) + price > schedule.daily_cap_cents;
      const state = verdict.state === 'skip' || overCap ? 'skipped' : verdict.state;
      const claimed = await rows.occurrences.claim({
        schedule_id: scheduleId,
        fire_at: due.fireAt,
        state,
        run_id: null,
        price_cents: price,
        local_day: day,
        claimed_at: now,
      });
      if (!claimed) return undefined;
      if (state === 'skipped') {
        await skip(schedule, overCap && verdict.state !== 'skip' ? 'daily_cap' : 'overlap', null, one);
        return undefined;
      }
      return state === 'pending' ? { schedule, fireAt: due.fireAt, cancel: verdict.cancel } : undefined;
    });

  /** Ended runs of schedules: a failure counts toward pause_after_failures, a success starts the count again. */
  const settle = async (): Promise<void> => {
    for (const ended of await rows.occurrences.ended(BATCH)) {
      await ctx.store.transaction(async () => {
        if (!(await rows.occurrences.set(ended.schedule_id, ended.fire_at, { state: 'settled' }, 'started'))) return;
        const schedule = await rows.schedules.getForUpdate(ended.schedule_id);
        if (schedule === undefined || ended.cancelled_at !== null) return;
        const failures = ended.status === 'failed' ? schedule.consecutive_failures + 1 : 0;
        const pause = schedule.paused === 0 && schedule.pause_after_failures !== null && failures >= schedule.pause_after_failures;
        await rows.schedules.update(ended.schedule_id, {
          consecutive_failures: failures,
          ...(pause ? { paused: 1, pause_reason: 'failures', next_fire_at: null, updated_at: ctx.clock.now() } : {}),
        });
        if (pause) await tellState(ended.schedule_id);
      });
    }
  };

  /** A buffered occurrence starts once the run before it ended; one claimed but never started is started again. */
  const startWaiting = async (now: number): Promise<void> => {
    for (const occurrence of await rows.occurrences.inState('buffered', now, BATCH)) {
      const schedule = await rows.schedules.get(occurrence.schedule_id);
      if (schedule === undefined) continue;
      const active = await rows.occurrences.active(schedule.schedule_id);
      if (active.running.length + active.queued.length + active.waiting > 0) continue;
      if (await rows.occurrences.set(schedule.schedule_id, occurrence.fire_at, { state: 'pending', claimed_at: now }, 'buffered'))
        await startRun(schedule, occurrence);
    }
    for (const occurrence of await rows.occurrences.inState('pending', now - PENDING_RETRY_MS, BATCH)) {
      const schedule = await rows.schedules.get(occurrence.schedule_id);
      if (schedule !== undefined) await startRun(schedule, occurrence);
    }
  };

  /** A schedule paused for money resumes by itself once one run of it would be covered by the wallet and the budgets. */
  const recheckMoney = async (now: number): Promise<void> => {
    for (const schedule of await rows.schedules.moneyPausedDue(now, BATCH)) {
      let covered = true;
      try {
        const price = (await prices.agentFor(schedule.user_id, schedule.agent_id)).price_cents;
        covered = (await ctx.ledger.balance(schedule.user_id)) >= price;
        if (covered) await budgets(schedule.user_id, schedule.agent_id, price, now);
      } catch (error) {
        if (!(error instanceof SvcError)) throw error;
        covered = false;
      }
      await ctx.store.transaction(async () => {
        const row = await rows.schedules.getForUpdate(schedule.schedule_id);
        if (row === undefined || row.paused !== 1 || !MONEY_REASONS.has(row.pause_reason ?? '')) return;
        if (!covered) return rows.schedules.update(row.schedule_id, { recheck_at: now + MONEY_RECHECK_MS });
        await rows.schedules.update(row.schedule_id, {
          paused: 0,
          pause_reason: null,
          recheck_at: null,
          next_fire_at: nextFireAfter(timingOf(row), now),
          updated_at: now,
        });
        await tellState(row.schedule_id);
      });
    }
  };

  /** One round at `now`; answers whether a batch was full (more is due). */
  const round = async (now: number): Promise<boolean> => {
    await settle();
    await recheckMoney(now);
    await startWaiting(now);
    const due = await rows.schedules.due(now, BATCH);
    const fireOne = async (scheduleId: string): Promise<void> => {
      const claimed = await fire(scheduleId, now);
      if (claimed === undefined) return;
      for (const runId of claimed.cancel) await cancel(claimed.schedule.user_id, runId).catch(() => undefined);
      await startRun(claimed.schedule, { fire_at: claimed.fireAt });
    };
    // Several at once: their transactions share commits (SQLite's group commit, store/group-commit.ts), which one
    // after another each paid, so a burst of occurrences due together starts in a fraction of the time.
    for (let i = 0; i < due.length; i += FIRE_CONCURRENCY) {
      const settled = await Promise.allSettled(due.slice(i, i + FIRE_CONCURRENCY).map((row) => fireOne(row.schedule_id)));
      const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    }
    return due.length === BATCH;
  };

  return { round, fire, startRun, nextFireAt: () => rows.schedules.nextFireAt() };
}

/** The scheduler's rounds, every run sweep (RunTiming.sweepMs), by the service's clock, until the service closes. */
export function scheduleScheduler(ctx: ServiceContext, log: { warn(details: object, message: string): void }): void {
  const scheduler = createScheduler(ctx);
  repeatInBackground(
    ctx,
    async () => {
      while (!ctx.shutdownSignal.aborted && (await scheduler.round(ctx.clock.now())));
      // The next round comes at the earliest fire time when that is before the next sweep: an occurrence is not
      // left waiting for the sweep's pace.
      const earliest = await scheduler.nextFireAt();
      // One still due after the rounds (a round that failed) waits for the sweep, never a loop without pause.
      const now = ctx.clock.now();
      return earliest === null || earliest <= now ? undefined : ({ wakeInMs: earliest - now } satisfies WakeIn);
    },
    ctx.runTiming.sweepMs,
    'schedules',
    log,
  );
}

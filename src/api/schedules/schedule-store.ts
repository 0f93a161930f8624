// The schedules' rows (docs/api.md "Schedules"): the schedule, its occurrences (one per fire time, kept for its life)
// and its coalesced skips, on either engine (store/schedules-migration.ts).
import type { Selectable } from 'kysely';
import type { OverlapPolicy, PauseReason, Schedule, ScheduleSkip } from '../../contract/schedules.js';
import { isoTime } from '../../lib/clock.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';
import type { Timing } from './fire-times.js';

export type ScheduleRow = Selectable<Tables['schedules']>;
export type OccurrenceRow = Selectable<Tables['schedule_occurrences']>;

export function timingOf(row: Pick<ScheduleRow, 'cron' | 'interval_seconds' | 'time_zone' | 'anchor_at'>): Timing {
  return { cron: row.cron, intervalSeconds: row.interval_seconds, timeZone: row.time_zone, anchorAt: row.anchor_at };
}

export function scheduleView(row: ScheduleRow): Schedule {
  return {
    schedule_id: row.schedule_id,
    agent_id: row.agent_id,
    input: row.input_json === null ? null : (JSON.parse(row.input_json) as Record<string, unknown>),
    cron: row.cron,
    interval_seconds: row.interval_seconds,
    time_zone: row.time_zone,
    overlap: row.overlap as OverlapPolicy,
    catch_up_seconds: row.catch_up_seconds,
    node_id: row.node_id,
    labels: JSON.parse(row.labels_json) as string[],
    daily_cap_cents: row.daily_cap_cents,
    pause_after_failures: row.pause_after_failures,
    paused: row.paused === 1,
    pause_reason: row.pause_reason as PauseReason | null,
    consecutive_failures: row.consecutive_failures,
    next_fire_at: row.paused === 1 || row.next_fire_at === null ? null : isoTime(row.next_fire_at),
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  };
}

export function createScheduleStore(store: Store) {
  const schedules = {
    async insert(row: ScheduleRow): Promise<void> {
      await store.db.insertInto('schedules').values(row).execute();
    },
    async countOf(userId: string): Promise<number> {
      const row = await store.db
        .selectFrom('schedules')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId)
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    },
    list(userId: string): Promise<ScheduleRow[]> {
      return store.db.selectFrom('schedules').selectAll().where('user_id', '=', userId).orderBy('schedule_id').execute();
    },
    get(scheduleId: string): Promise<ScheduleRow | undefined> {
      return store.db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId).executeTakeFirst();
    },
    /** Inside a transaction: the row, locked against the other instances' changes and rounds (PostgreSQL). */
    getForUpdate(scheduleId: string): Promise<ScheduleRow | undefined> {
      return store.forUpdate(store.db.selectFrom('schedules').selectAll().where('schedule_id', '=', scheduleId)).executeTakeFirst();
    },
    async update(scheduleId: string, change: Partial<ScheduleRow>): Promise<void> {
      await store.db.updateTable('schedules').set(change).where('schedule_id', '=', scheduleId).execute();
    },
    async remove(scheduleId: string): Promise<void> {
      // The occurrences and skips go with it (ON DELETE CASCADE is not on by default in SQLite: removed here).
      await store.db.deleteFrom('schedule_occurrences').where('schedule_id', '=', scheduleId).execute();
      await store.db.deleteFrom('schedule_skips').where('schedule_id', '=', scheduleId).execute();
      await store.db.deleteFrom('schedules').where('schedule_id', '=', scheduleId).execute();
    },
    /** The schedules whose next fire time has come, oldest first. */
    due(now: number, limit: number): Promise<Array<Pick<ScheduleRow, 'schedule_id'>>> {
      return store.db
        .selectFrom('schedules')
        .select('schedule_id')
        .where('paused', '=', 0)
        .where('next_fire_at', '<=', now)
        .orderBy('next_fire_at')
        .limit(limit)
        .execute();
    },
    /** The earliest next fire time of any schedule not paused; null: none. */
    async nextFireAt(): Promise<number | null> {
      const row = await store.db
        .selectFrom('schedules')
        .select('next_fire_at')
        .where('paused', '=', 0)
        .where('next_fire_at', 'is not', null)
        .orderBy('next_fire_at')
        .limit(1)
        .executeTakeFirst();
      return row?.next_fire_at === undefined || row.next_fire_at === null ? null : Number(row.next_fire_at);
    },
    /** Paused for money, and due to look again whether a run would be covered. */
    moneyPausedDue(now: number, limit: number): Promise<ScheduleRow[]> {
      return store.db
        .selectFrom('schedules')
        .selectAll()
        .where('paused', '=', 1)
        .where('pause_reason', 'in', ['insufficient_balance', 'budget_exceeded'])
        .where('recheck_at', '<=', now)
        .limit(limit)
        .execute();
    },
  };

  const occurrences = {
    /** Claims the occurrence: true for the one caller that made its row, false for every other (another instance). */
    async claim(row: OccurrenceRow): Promise<boolean> {
      const result = await store.db
        .insertInto('schedule_occurrences')
        .values(row)
        .onConflict((oc) => oc.columns(['schedule_id', 'fire_at']).doNothing())
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
    },
    async set(scheduleId: string, fireAt: number, change: Partial<OccurrenceRow>, fromState?: OccurrenceRow['state']): Promise<boolean> {
      let query = store.db
        .updateTable('schedule_occurrences')
        .set(change)
        .where('schedule_id', '=', scheduleId)
        .where('fire_at', '=', fireAt);
      if (fromState !== undefined) query = query.where('state', '=', fromState);
      const result = await query.executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },
    /** Its runs still queued or running, and its occurrences waiting for one (pending, buffered). */
    async active(scheduleId: string): Promise<{ queued: string[]; running: string[]; waiting: number; buffered: number }> {
      const rows = await store.db
        .selectFrom('schedule_occurrences as o')
        .leftJoin('runs as r', 'r.run_id', 'o.run_id')
        .select(['o.state', 'o.run_id', 'r.status'])
        .where('o.schedule_id', '=', scheduleId)
        .where('o.state', 'in', ['pending', 'buffered', 'started'])
        .execute();
      const ofStatus = (status: string) => rows.filter((r) => r.state === 'started' && r.status === status).map((r) => r.run_id!);
      return {
        queued: ofStatus('queued'),
        running: ofStatus('running'),
        waiting: rows.filter((r) => r.state === 'pending').length,
        buffered: rows.filter((r) => r.state === 'buffered').length,
      };
    },
    /** What the schedule's occurrences of one local day hold against its cap: charges kept, and prices of runs to come. */
    async spentOn(scheduleId: string, day: string): Promise<number> {
      const rows = await store.db
        .selectFrom('schedule_occurrences as o')
        .leftJoin('runs as r', 'r.run_id', 'o.run_id')
        .select(['o.state', 'o.price_cents', 'o.run_id', 'r.charged_cents'])
        .where('o.schedule_id', '=', scheduleId)
        .where('o.local_day', '=', day)
        .where('o.state', 'in', ['pending', 'buffered', 'started', 'settled'])
        .execute();
      return rows.reduce(
        // One without a run counts its price: not started yet, or the charges a node's migration carried over.
        (sum, r) =>
          sum + (r.state === 'pending' || r.state === 'buffered' || r.run_id === null ? r.price_cents : Number(r.charged_cents ?? 0)),
        0,
      );
    },
    /** Runs started by schedules that have ended since: to count their failures. */
    ended(limit: number) {
      return store.db
        .selectFrom('schedule_occurrences as o')
        .innerJoin('runs as r', 'r.run_id', 'o.run_id')
        .select(['o.schedule_id', 'o.fire_at', 'r.status', 'r.cancelled_at'])
        .where('o.state', '=', 'started')
        .where('r.status', 'in', ['succeeded', 'failed'])
        .limit(limit)
        .execute();
    },
    inState(state: OccurrenceRow['state'], claimedBefore: number, limit: number): Promise<OccurrenceRow[]> {
      return store.db
        .selectFrom('schedule_occurrences')
        .selectAll()
        .where('state', '=', state)
        .where('claimed_at', '<=', claimedBefore)
        .orderBy('fire_at')
        .limit(limit)
        .execute();
    },
    inRange(scheduleId: string, from: number, to: number): Promise<OccurrenceRow[]> {
      return store.db
        .selectFrom('schedule_occurrences')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .where('fire_at', '>=', from)
        .where('fire_at', '<=', to)
        .orderBy('fire_at')
        .execute();
    },
    latest(scheduleId: string, limit: number): Promise<OccurrenceRow[]> {
      return store.db
        .selectFrom('schedule_occurrences')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .where('state', '!=', 'skipped')
        .orderBy('fire_at', 'desc')
        .limit(limit)
        .execute();
    },
  };

  const skips = {
    /**
     * One more skip for `reason`: added to the schedule's open record for that reason, or a new record (closing the
     * open one of another reason). Answers whether a record was made: a change of state, worth telling once.
     */
    async record(
      scheduleId: string,
      reason: string,
      detail: string | null,
      times: { count: number; firstAt: number; lastAt: number },
    ): Promise<boolean> {
      const open = await store.db
        .selectFrom('schedule_skips')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .where('open', '=', 1)
        .executeTakeFirst();
      if (open !== undefined && open.reason === reason) {
        await store.db
          .updateTable('schedule_skips')
          .set({ count: open.count + times.count, last_at: Math.max(open.last_at, times.lastAt), detail })
          .where('skip_id', '=', open.skip_id)
          .execute();
        return false;
      }
      if (open !== undefined) await skips.close(scheduleId);
      await store.db
        .insertInto('schedule_skips')
        .values({
          skip_id: timeOrderedId(times.lastAt),
          schedule_id: scheduleId,
          reason,
          detail,
          count: times.count,
          first_at: times.firstAt,
          last_at: times.lastAt,
          open: 1,
        })
        .execute();
      return true;
    },
    async close(scheduleId: string): Promise<void> {
      await store.db.updateTable('schedule_skips').set({ open: 0 }).where('schedule_id', '=', scheduleId).where('open', '=', 1).execute();
    },
    async latest(scheduleId: string, limit: number): Promise<ScheduleSkip[]> {
      const rows = await store.db
        .selectFrom('schedule_skips')
        .selectAll()
        .where('schedule_id', '=', scheduleId)
        .orderBy('skip_id', 'desc')
        .limit(limit)
        .execute();
      return rows.map((r) => ({
        reason: r.reason,
        count: r.count,
        first_at: isoTime(r.first_at),
        last_at: isoTime(r.last_at),
        detail: r.detail,
      }));
    },
  };

  return { schedules, occurrences, skips };
}

export type ScheduleStore = ReturnType<typeof createScheduleStore>;

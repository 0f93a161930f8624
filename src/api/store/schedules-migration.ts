// Schema version 21: schedules kept by the service (docs/api.md "Schedules"). Each occurrence a schedule fires is a
// row keyed by (schedule, fire time), kept as long as the schedule is: the primary key is what makes two instances
// firing one occurrence make one run (docs/decisions/0037-schedules-at-the-service.md). Skips are coalesced: one row
// per run of consecutive skips for one reason, with a count and the first and last times.
import type { Kysely } from 'kysely';

export async function schedules(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('schedules')
    .addColumn('schedule_id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('input_json', 'text')
    .addColumn('cron', 'text')
    .addColumn('interval_seconds', 'integer')
    .addColumn('time_zone', 'text', (c) => c.notNull())
    .addColumn('overlap', 'text', (c) => c.notNull())
    .addColumn('catch_up_seconds', 'integer', (c) => c.notNull())
    .addColumn('node_id', 'text')
    .addColumn('labels_json', 'text', (c) => c.notNull())
    .addColumn('daily_cap_cents', 'integer')
    .addColumn('pause_after_failures', 'integer')
    .addColumn('paused', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('pause_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    // The next occurrence to fire; null while paused. An interval counts from anchor_at.
    .addColumn('next_fire_at', 'bigint')
    .addColumn('anchor_at', 'bigint', (c) => c.notNull())
    // When a schedule paused for money is next checked for whether a run would be covered.
    .addColumn('recheck_at', 'bigint')
    // The JWT (jti) that made or last resumed it: its authority (docs/api.md "Schedules").
    .addColumn('authorized_jti', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedules_by_user').on('schedules').columns(['user_id', 'schedule_id']).execute();
  await db.schema.createIndex('schedules_due').on('schedules').columns(['paused', 'next_fire_at']).execute();
  await db.schema
    .createTable('schedule_occurrences')
    .addColumn('schedule_id', 'text', (c) => c.notNull().references('schedules.schedule_id').onDelete('cascade'))
    .addColumn('fire_at', 'bigint', (c) => c.notNull())
    // pending: claimed, its run not yet started; buffered: waits for the run before it to end; started: has its run;
    // skipped: made none; settled: its run ended and was counted for the schedule's failures.
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text')
    // The price it holds against the daily cap until its run is made, and the day (in the schedule's zone) it counts on.
    .addColumn('price_cents', 'integer', (c) => c.notNull())
    .addColumn('local_day', 'text', (c) => c.notNull())
    .addColumn('claimed_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_occurrences_pkey', ['schedule_id', 'fire_at'])
    .execute();
  await db.schema.createIndex('schedule_occurrences_by_state').on('schedule_occurrences').columns(['state', 'schedule_id']).execute();
  await db.schema
    .createTable('schedule_skips')
    .addColumn('skip_id', 'text', (c) => c.primaryKey())
    .addColumn('schedule_id', 'text', (c) => c.notNull().references('schedules.schedule_id').onDelete('cascade'))
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .addColumn('count', 'integer', (c) => c.notNull())
    .addColumn('first_at', 'bigint', (c) => c.notNull())
    .addColumn('last_at', 'bigint', (c) => c.notNull())
    // 1 while the next skip for the same reason adds to it; a run made closes it.
    .addColumn('open', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('schedule_skips_by_schedule').on('schedule_skips').columns(['schedule_id', 'skip_id']).execute();
}

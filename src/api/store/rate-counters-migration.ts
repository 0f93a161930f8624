// Schema version 18: counters of clock-aligned windows shared by every instance (docs/api.md "Counted limits under
// concurrency"), one row per limit and subject: the start of the window it counts and what was taken in it. A request
// takes one with a single upsert, which the row's lock orders, and reads back the count it made; a row of a window
// gone by counts from 0 again, so nothing sweeps them and there is at most one row per subject. The uploads a user
// makes an hour are the first (agents/upload-rate.ts).
import type { Kysely } from 'kysely';

export async function rateCounters(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rate_counters')
    .addColumn('counter', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('taken', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('rate_counters_pkey', ['counter', 'subject'])
    .execute();
}

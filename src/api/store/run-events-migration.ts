// Schema version 24: a run's structured events (docs/api.md "Run events"), kept as its log is: its entries keyed by
// (run, seq) so a batch the node sends again is stored once, and one row per run that has events, with what is
// counted against the caps and whether they were reached.
import type { Kysely } from 'kysely';

export async function runEvents(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_event_streams')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.run_id').onDelete('cascade'))
    .addColumn('stored_events', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('stored_bytes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_seq', 'integer', (c) => c.notNull().defaultTo(-1))
    .addColumn('truncated', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('run_event_entries')
    .addColumn('run_id', 'text', (c) => c.notNull().references('run_event_streams.run_id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('data_json', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_event_entries_pkey', ['run_id', 'seq'])
    .execute();
}

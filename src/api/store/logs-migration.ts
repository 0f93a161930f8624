// Schema version 13: the logs of runs (docs/api.md "Run logs"). A run's log is its entries, keyed by (run, seq) so a
// batch the node sends again is stored once, and one row per run that has a log: the bytes stored against the cap,
// whether it was truncated, and its retention (when its run ended, when its entries were removed). The run's end is
// copied onto that row by the retention sweep, which then finds what expired by an index instead of reading every
// run ever finished.
import { sql, type Kysely } from 'kysely';

export async function runLogs(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('run_logs')
    .addColumn('run_id', 'text', (c) => c.primaryKey().references('runs.run_id').onDelete('cascade'))
    .addColumn('stored_bytes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_seq', 'integer', (c) => c.notNull().defaultTo(-1))
    .addColumn('truncated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .execute();
  // The logs whose run had not ended at the last sweep (few: the runs in flight), and those waiting to expire.
  await db.schema.createIndex('run_logs_open').on('run_logs').column('run_id').where(sql.ref('ended_at'), 'is', null).execute();
  await db.schema.createIndex('run_logs_ending').on('run_logs').column('ended_at').where(sql.ref('expired_at'), 'is', null).execute();
  await db.schema
    .createTable('run_log_entries')
    .addColumn('run_id', 'text', (c) => c.notNull().references('run_logs.run_id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('stream', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_log_entries_pkey', ['run_id', 'seq'])
    .execute();
}

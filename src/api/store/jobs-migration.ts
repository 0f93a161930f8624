// Schema version 12: runs as jobs (docs/api.md "Runs as jobs"). Columns of their own on the runs for their time
// limit, queue, attempts and cancel; the attempts that ended before the last; a node's clean stop; what each uploaded
// version's agent.json asks of its runs. Cancelled is stored as `failed` with cancelled_at set, not as a status of
// its own: SQLite's CHECK on runs.status could only change by copying the table, which run_labels and the nodes'
// ephemeral runs refer to.
import { sql, type Kysely } from 'kysely';

export async function runsAsJobs(db: Kysely<unknown>): Promise<void> {
  for (const column of ['timeout_seconds', 'queue_seconds']) await db.schema.alterTable('runs').addColumn(column, 'integer').execute();
  for (const column of ['queue_deadline_at', 'cancel_requested_at', 'cancelled_at'])
    await db.schema.alterTable('runs').addColumn(column, 'bigint').execute();
  await db.schema
    .alterTable('runs')
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('runs')
    .addColumn('retry_safe', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  // The history lists a user's runs newest first, and by agent; runs_by_user (user_id, started_at) serves the first.
  await db.schema.createIndex('runs_by_user_agent').on('runs').columns(['user_id', 'agent_id', 'started_at']).execute();
  await db.schema
    .createTable('run_attempts')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('node_id', 'text')
    .addColumn('claimed_at', 'bigint')
    .addColumn('ended_at', 'bigint', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_attempts_pkey', ['run_id', 'attempt'])
    .execute();
  await db.schema.alterTable('nodes').addColumn('offline_at', 'bigint').execute();
  await db.schema.alterTable('agent_versions').addColumn('run_terms_json', 'text').execute();
  // The queued runs waiting on a deadline are found by it (the sweep), as the leased ones by lease_expires_at.
  await db.schema
    .createIndex('runs_queue_deadline')
    .on('runs')
    .column('queue_deadline_at')
    .where(sql.ref('status'), '=', 'queued')
    .execute();
}

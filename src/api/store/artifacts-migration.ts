// The artifacts of runs (docs/api.md "Run artifacts"). A file's bytes are stored once per user and digest (a blob),
// in chunks of 1 MiB rows, in the database every instance shares, so any instance serves any download and a backup
// holds them with the runs that name them; a run's artifact is its name pointing at one of its user's blobs. Never
// deduplicated across users: whether someone else stored the same bytes is not for another user to learn from what
// their quota is charged.
import { PostgresAdapter, sql, type Kysely } from 'kysely';

export async function runArtifacts(db: Kysely<unknown>): Promise<void> {
  // The column type of bytes on each engine: PostgreSQL's bytea, SQLite's blob (as agent_bundles.content).
  const bytes = db.getExecutor().adapter instanceof PostgresAdapter ? 'bytea' : 'blob';
  // complete 0: its chunks are still being written (an upload in flight, or one a crash cut short, which the
  // retention sweep removes); only complete blobs are named by artifacts, and one per user and digest.
  await db.schema
    .createTable('artifact_blobs')
    .addColumn('blob_id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull().check(sql`length(sha256) = 64`))
    .addColumn('size_bytes', 'bigint', (c) => c.notNull().check(sql`size_bytes >= 0`))
    .addColumn('complete', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('artifact_blobs_by_digest')
    .on('artifact_blobs')
    .columns(['user_id', 'sha256'])
    .unique()
    .where(sql.ref('complete'), '=', 1)
    .execute();
  await db.schema
    .createTable('artifact_chunks')
    .addColumn('blob_id', 'text', (c) => c.notNull().references('artifact_blobs.blob_id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('content', bytes, (c) => c.notNull())
    .addPrimaryKeyConstraint('artifact_chunks_pkey', ['blob_id', 'seq'])
    .execute();
  // lease_id: the attempt that uploaded it; a later attempt's first upload replaces what an earlier one left.
  await db.schema
    .createTable('run_artifacts')
    .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('blob_id', 'text', (c) => c.notNull().references('artifact_blobs.blob_id'))
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('lease_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_artifacts_pkey', ['run_id', 'name'])
    .execute();
  await db.schema.createIndex('run_artifacts_by_blob').on('run_artifacts').column('blob_id').execute();
}

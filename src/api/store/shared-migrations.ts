// Changes to the schema after version 5, one entry per version, each run by both engines (Kysely's schema builder
// compiles it for each): entry i brings the schema from version 6 + i - 1 to 6 + i. SQLite reaches version 5
// through its shipped history (sqlite-migrations.ts), PostgreSQL through its baseline (postgres-schema.ts); from
// there they move together. Append; never edit a shipped one.
import type { Kysely } from 'kysely';

export const SHARED_MIGRATIONS_FROM_VERSION = 6;

export const SHARED_MIGRATIONS: ReadonlyArray<(db: Kysely<unknown>) => Promise<void>> = [
  /* 6: a node removed from its user's fleet (by the user, or offline too long) keeps its row, so its credential is
     answered 410 node_removed rather than taken for a forgery, and its runs keep naming it. */
  async (db) => {
    await db.schema.alterTable('nodes').addColumn('removed_at', 'bigint').execute();
  },
];

/** The schema version this program migrates either engine to. */
export const SERVICE_SCHEMA_VERSION = SHARED_MIGRATIONS_FROM_VERSION - 1 + SHARED_MIGRATIONS.length;

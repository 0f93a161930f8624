// Changes to the schema after version 5, one entry per version, each run by both engines (Kysely's schema builder
// compiles it for each): entry i brings the schema from version 6 + i - 1 to 6 + i. SQLite reaches version 5
// through its shipped history (sqlite-migrations.ts), PostgreSQL through its baseline (postgres-schema.ts); from
// there they move together. Append; never edit a shipped one.
import type { Kysely } from 'kysely';

export const SHARED_MIGRATIONS_FROM_VERSION = 6;

export const SHARED_MIGRATIONS: ReadonlyArray<(db: Kysely<unknown>) => Promise<void>> = [];

/** The schema version this program brings a database to, on either engine. */
export const SCHEMA_VERSION = SHARED_MIGRATIONS_FROM_VERSION - 1 + SHARED_MIGRATIONS.length;

// What operations ask of the database, behind one small interface so that each storage engine answers it its own
// way (SQLite's PRAGMA user_version, PostgreSQL's svc_schema_version; the rest is one query for both). Readiness uses the first two; the
// metrics' gauges the last two, read at scrape time: they are the state of the whole service, whichever instance
// changed it, so every instance reports the same figure.
import { sql } from 'kysely';
import { SERVICE_SCHEMA_VERSION } from '../store/shared-migrations.js';
import type { Store } from '../store/store.js';

export interface MigrationStatus {
  /** The schema version the database is at. */
  applied: number;
  /** The version this program's migrations bring it to. */
  expected: number;
}

export interface StoreProbe {
  /** Resolves once the database answered a trivial query; rejects with the engine's error otherwise. */
  ping(): Promise<void>;
  migrationStatus(): Promise<MigrationStatus>;
  /** Runs accepted and not yet finished, by status. */
  runsInFlight(): Promise<{ queued: number; running: number }>;
  /** Enrolled nodes whose last poll came at or after `since` (epoch ms): online (docs/api.md "Runs on the node"). */
  nodesSeenSince(since: number): Promise<number>;
}

export function createStoreProbe(store: Store): StoreProbe {
  return {
    async ping() {
      // Reads the catalog, not just a constant, so a database gone bad shows here.
      await sql`SELECT count(*) FROM ${sql.raw(store.engine === 'sqlite' ? 'sqlite_schema' : 'pg_catalog.pg_class')}`.execute(store.db);
    },
    async migrationStatus() {
      if (store.engine === 'sqlite') {
        const row = (await sql<{ user_version: number }>`PRAGMA user_version`.execute(store.db)).rows[0];
        return { applied: row?.user_version ?? 0, expected: SERVICE_SCHEMA_VERSION };
      }
      const row = (await sql<{ version: number }>`SELECT version FROM svc_schema_version`.execute(store.db)).rows[0];
      return { applied: row?.version ?? 0, expected: SERVICE_SCHEMA_VERSION };
    },
    async runsInFlight() {
      // Literal statuses, so SQLite walks its partial indexes (runs_queued, runs_leased), never the finished runs.
      const count = async (status: 'queued' | 'running'): Promise<number> =>
        Number(
          (await sql<{ n: number }>`SELECT count(*) AS n FROM runs WHERE status = ${sql.lit(status)}`.execute(store.db)).rows[0]?.n ?? 0,
        );
      return { queued: await count('queued'), running: await count('running') };
    },
    async nodesSeenSince(since) {
      const row = await store.db
        .selectFrom('nodes')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('last_seen_at', '>=', since)
        .where('offline_at', 'is', null)
        .where('removed_at', 'is', null)
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    },
  };
}

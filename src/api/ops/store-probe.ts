// What operations ask of the database, behind one small interface so that each storage engine answers it its own
// way (the SQLite file today; a PostgreSQL pool implements the same four calls). Readiness uses the first two; the
// metrics' gauges the last two, read at scrape time: they are the state of the whole service, whichever instance
// changed it, so every instance reports the same figure.
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { SERVICE_MIGRATIONS } from '../store/migrations.js';

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

export function createSqliteStoreProbe(db: SqliteDatabase): StoreProbe {
  // Prepared per call, not cached: a closed connection must fail the probe, never answer from a stale statement.
  return {
    async ping() {
      // Reads the schema page from the file, not just a constant, so a file gone bad shows here.
      db.prepare('SELECT count(*) FROM sqlite_schema').pluck().get();
    },
    async migrationStatus() {
      return { applied: db.pragma('user_version', { simple: true }) as number, expected: SERVICE_MIGRATIONS.length };
    },
    async runsInFlight() {
      // Each count walks its partial index (runs_queued, runs_leased), never the finished runs.
      const queued = db.prepare("SELECT count(*) FROM runs WHERE status = 'queued'").pluck().get() as number;
      const running = db.prepare("SELECT count(*) FROM runs WHERE status = 'running'").pluck().get() as number;
      return { queued, running };
    },
    async nodesSeenSince(since) {
      return db.prepare('SELECT count(*) FROM nodes WHERE last_seen_at >= ?').pluck().get(since) as number;
    },
  };
}

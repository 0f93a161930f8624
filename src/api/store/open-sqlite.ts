// The embedded engine: the SQLite file in the data directory, opened the one way both programs open theirs
// (src/lib/sqlite.ts: WAL, busy timeout, numbered migrations), under Kysely. Two things Kysely's own SQLite driver
// does differently are put back: a statement is prepared once per connection, not per query (a prepared statement
// holds native memory V8 does not see, and preparing is most of a small query's cost), and a transaction begins
// IMMEDIATE, taking the write lock first, so a read-then-write transaction never fails with SQLITE_BUSY half-way
// when another process (a backup, a shell) holds the file.
import {
  CompiledQuery,
  Kysely,
  SqliteDialect,
  SqliteDriver,
  sql,
  type DatabaseConnection,
  type Driver,
  type SqliteDialectConfig,
  type SqliteStatement,
} from 'kysely';
import { openDatabase, prepared, type SqliteDatabase } from '../../lib/sqlite.js';
import { SERVICE_MIGRATIONS } from './sqlite-migrations.js';
import { SERVICE_SCHEMA_VERSION, SHARED_MIGRATIONS, SHARED_MIGRATIONS_FROM_VERSION } from './shared-migrations.js';
import { createStore, type Store } from './store.js';
import type { Tables } from './tables.js';

/**
 * The service's page cache: the indexes an execute touches (runs, keys, ledger by user and by run) outgrow SQLite's
 * default 2 MB after some 100k runs, and each page read back from the OS costs a system call (bench:execute's 1M-run
 * case).
 */
const SERVICE_CACHE_KIB = 64 * 1024;

export interface SqliteStore extends Store {
  /** The connection itself: the WAL checkpoint, and tests that read the file directly. */
  readonly sqlite: SqliteDatabase;
}

export async function openSqliteStore(path: string): Promise<SqliteStore> {
  const sqlite = openDatabase(path, { migrations: SERVICE_MIGRATIONS, latestVersion: SERVICE_SCHEMA_VERSION, cacheKiB: SERVICE_CACHE_KIB });
  const kysely = new Kysely<Tables>({
    dialect: new ImmediateSqliteDialect(sqlite, {
      database: { prepare: (text) => prepared(sqlite, text) as unknown as SqliteStatement, close: () => sqlite.close() },
    }),
  });
  try {
    await runSharedMigrations(kysely as unknown as Kysely<unknown>, sqlite);
  } catch (error) {
    await kysely.destroy();
    throw error;
  }
  const store = createStore('sqlite', kysely, () => kysely.destroy(), { groupCommit: { inTransaction: () => sqlite.inTransaction } });
  return Object.assign(store, { sqlite });
}

/** The migrations after the shipped five, the same ones PostgreSQL runs; user_version counts them on. */
async function runSharedMigrations(db: Kysely<unknown>, sqlite: SqliteDatabase): Promise<void> {
  const target = SERVICE_SCHEMA_VERSION;
  for (let version = sqlite.pragma('user_version', { simple: true }) as number; version < target; version += 1) {
    await db.transaction().execute(async (trx) => {
      // Another process may have applied it since; the write lock (BEGIN IMMEDIATE) is ours now, so look again.
      if ((sqlite.pragma('user_version', { simple: true }) as number) > version) return;
      await SHARED_MIGRATIONS[version + 1 - SHARED_MIGRATIONS_FROM_VERSION]!(trx);
      await sql.raw(`PRAGMA user_version = ${version + 1}`).execute(trx);
    });
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #sqlite: SqliteDatabase;
  readonly #config: SqliteDialectConfig;

  constructor(sqlite: SqliteDatabase, config: SqliteDialectConfig) {
    super(config);
    this.#sqlite = sqlite;
    this.#config = config;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#sqlite, this.#config);
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  readonly #sqlite: SqliteDatabase;

  constructor(sqlite: SqliteDatabase, config: SqliteDialectConfig) {
    super(config);
    this.#sqlite = sqlite;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('BEGIN IMMEDIATE'));
  }

  // SQLite rolls a transaction back itself on some errors (SQLITE_FULL among them): a ROLLBACK then would fail and
  // hide the error that matters (a full disk answers 503, src/api/http/problem.ts).
  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#sqlite.inTransaction) await super.rollbackTransaction(connection);
  }
}

// One way to open a SQLite file for both programs: WAL so readers never wait for the
// writer, kept to a bounded size on disk; a busy timeout so concurrent processes queue instead of failing; numbered
// migrations by user_version; a new file made whole before anyone else can open it.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SvcError } from '../contract/errors.js';

export type SqliteDatabase = Database.Database;

/**
 * What the WAL is trimmed to when it restarts after a checkpoint (PRAGMA journal_size_limit). Without a limit
 * SQLite reuses the file and never shrinks it, so one burst (a long read holding the checkpoint back while writes
 * go on) leaves its size on disk for good. 4 MiB is what the automatic checkpoint (1000 pages of 4 KiB) lets the
 * log reach in normal use: steady writing never pays for a truncate and regrow, and only a burst is cut back.
 */
export const WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

export interface OpenDatabaseOptions {
  /** Each entry is one migration's SQL; entry i brings user_version from i to i + 1. Never edit a shipped one. */
  migrations: readonly string[];
  /**
   * The newest version this program knows, when the caller migrates on past `migrations` itself (svc-api's
   * migrations shared with PostgreSQL): a file at a version up to it is not "newer than this program".
   */
  latestVersion?: number;
  busyTimeoutMs?: number;
  /** SQLite's page cache of this connection, in KiB (its default is 2,000: the node's small journal needs no more). */
  cacheKiB?: number;
  /** Called with the current user_version before pending migrations run (the node backs the file up there). */
  beforeMigrate?: (db: SqliteDatabase, fromVersion: number, toVersion: number) => void;
}

export function openDatabase(path: string, options: OpenDatabaseOptions): SqliteDatabase {
  let db: SqliteDatabase | undefined;
  try {
    if (!existsSync(path)) createWhole(path, options);
    db = new Database(path);
    configure(db, options);
    migrate(db, options);
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof SvcError) throw error;
    throw new SvcError('local_state', `cannot open the database ${path}: ${describeSqliteError(error)}`, {
      remedy: `Check that ${path} is a readable SQLite database; restore it from a backup or move it aside to start afresh.`,
      cause: error,
    });
  }
}

function configure(db: SqliteDatabase, options: OpenDatabaseOptions): void {
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  db.pragma('journal_mode = WAL');
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  if (options.cacheKiB !== undefined) db.pragma(`cache_size = -${options.cacheKiB}`);
}

/**
 * Makes a new database at a private name, in WAL mode and migrated, then links it into place. Processes that start
 * at once on a fresh node (five CLI commands) would otherwise all find an empty file in rollback mode and switch it
 * to WAL together: that switch wants the file to itself, and SQLite refuses one of two connections that each hold a
 * read lock and want the write lock ("database is locked") without calling the busy handler, since waiting could
 * never end. Linked, the file appears whole or not at all: the first link wins, the others open the winner's.
 */
function createWhole(path: string, options: OpenDatabaseOptions): void {
  const draft = `${path}.new-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const db = new Database(draft);
    try {
      configure(db, options);
      migrate(db, options);
    } finally {
      db.close();
    }
    try {
      linkSync(draft, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  } finally {
    for (const file of [draft, `${draft}-wal`, `${draft}-shm`]) rmSync(file, { force: true });
  }
}

function migrate(db: SqliteDatabase, options: OpenDatabaseOptions): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const target = options.migrations.length;
  const latest = Math.max(target, options.latestVersion ?? target);
  if (current > latest) {
    throw new SvcError('local_state', `the database ${db.name} has schema version ${current}, newer than this program's ${latest}`, {
      remedy: 'Upgrade the program, or roll back to the database backup taken before the upgrade.',
    });
  }
  if (current >= target) return;
  options.beforeMigrate?.(db, current, target);
  for (let version = current; version < target; version += 1) {
    db.transaction(() => {
      // Another process opening the same file may have applied it since user_version was read; the write lock is
      // ours now, so look again (five CLI processes starting at once on a fresh node all get here).
      if ((db.pragma('user_version', { simple: true }) as number) > version) return;
      db.exec(options.migrations[version]!);
      db.pragma(`user_version = ${version + 1}`);
    }).immediate();
  }
}

function describeSqliteError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') return 'the file is not a SQLite database or is corrupt';
    if (code === 'SQLITE_CANTOPEN') return 'the file cannot be opened (missing directory or no permission)';
    if (code === 'SQLITE_READONLY') return 'the file is read-only';
    return error.message;
  }
  return String(error);
}

const statements = new WeakMap<SqliteDatabase, Map<string, Database.Statement<unknown[], unknown>>>();

/**
 * The statement for `sql`, prepared once per connection. A long-lived process (the daemon) runs the same statements
 * every tick, and a statement prepared per call holds native memory that V8 does not see, freed only by a major GC
 * that a small heap rarely runs.
 */
export function prepared<Parameters extends unknown[] | Record<string, unknown> = unknown[], Row = unknown>(
  db: SqliteDatabase,
  sql: string,
): Database.Statement<Parameters, Row> {
  let cache = statements.get(db);
  if (cache === undefined) statements.set(db, (cache = new Map()));
  let statement = cache.get(sql);
  if (statement === undefined) cache.set(sql, (statement = db.prepare(sql)));
  return statement as unknown as Database.Statement<Parameters, Row>;
}

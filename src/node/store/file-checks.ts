// The database as a file, for install and doctor: a consistent snapshot, and SQLite's own integrity check. Both open
// it without migrating it (another release may own its schema), and neither needs the program's store to be open.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { readDaemonStatus, type DaemonStatus } from './daemon-state.js';

/**
 * docs/operations.md "Upgrade": the database is backed up before a migration. Install cannot know whether another
 * version will migrate, so it snapshots before every switch of `current` to another release: VACUUM INTO writes a
 * consistent copy even while the daemon writes (WAL), which a plain file copy would not.
 */
export async function backupDatabase(databaseFile: string, backupsDir: string, label: string, now: Date): Promise<string | undefined> {
  if (!existsSync(databaseFile)) return undefined;
  mkdirSync(backupsDir, { recursive: true, mode: 0o700 });
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const target = join(backupsDir, `swarm-node.db.${label}.${stamp}`);
  await withFile(databaseFile, (db) => db.prepare('VACUUM INTO ?').run(target));
  chmodSync(target, 0o600);
  return target;
}

/** PRAGMA integrity_check's findings: ['ok'] for a sound file. Throws when the file cannot be opened at all. */
export async function integrityFindings(databaseFile: string): Promise<string[]> {
  return withFile(databaseFile, (db) =>
    (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((row) => row.integrity_check),
  );
}

/** What the daemon recorded of itself in the node's database (daemon-state.ts), read without migrating it. */
export async function daemonRecord(databaseFile: string, now: number): Promise<DaemonStatus> {
  return withFile(databaseFile, (db) => readDaemonStatus(db, now));
}

async function withFile<T>(databaseFile: string, use: (db: SqliteDatabase) => T): Promise<T> {
  // Loaded here, not at start: install and doctor load SQLite only when a database is there.
  const { default: Database } = await import('better-sqlite3');
  // Not read-only: a read-only connection cannot remove the -wal and -shm files it creates, and root-owned ones
  // would lock the service user out of its own database.
  const db = new Database(databaseFile, { fileMustExist: true });
  try {
    return use(db);
  } finally {
    db.close();
  }
}

// issue 4 §5: the database is backed up before a migration. Install cannot know whether another version will
// migrate, so it snapshots before every switch of `current` to another release: VACUUM INTO writes a consistent
// copy even while the daemon writes (WAL), which a plain file copy would not.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

export async function backupDatabase(databaseFile: string, backupsDir: string, label: string, now: Date): Promise<string | undefined> {
  if (!existsSync(databaseFile)) return undefined;
  mkdirSync(backupsDir, { recursive: true, mode: 0o700 });
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  const target = join(backupsDir, `swarm-node.db.${label}.${stamp}`);
  const { default: Database } = await import('better-sqlite3');
  // Not read-only: a read-only connection cannot remove the -wal and -shm files it creates, and root-owned ones
  // would lock the service user out of its own database.
  const db = new Database(databaseFile, { fileMustExist: true });
  try {
    db.prepare('VACUUM INTO ?').run(target);
  } finally {
    db.close();
  }
  chmodSync(target, 0o600);
  return target;
}

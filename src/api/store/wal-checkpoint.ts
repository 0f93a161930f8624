// The service's WAL, emptied once a minute and at close. journal_size_limit (src/lib/sqlite.ts) trims the log only
// when it restarts, which needs a moment with no reader behind the last checkpoint; on a busy service that moment
// can be long in coming. A TRUNCATE checkpoint copies every committed page into the database and cuts the log to
// zero bytes when nothing holds it back. It never waits: better-sqlite3 waits synchronously, which would stall every
// request while another process (a backup, an sqlite3 shell) reads an older snapshot; it is simply tried again.
import type { FastifyBaseLogger } from 'fastify';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export const WAL_CHECKPOINT_INTERVAL_MS = 60 * 1000;

interface CheckpointRow {
  /** 1 when a reader or writer kept the checkpoint from completing; it is tried again next time. */
  busy: number;
}

/** True when the log was emptied. Never throws: a failed checkpoint leaves a longer log, not a broken service. */
export function checkpointWal(db: SqliteDatabase, log: FastifyBaseLogger): boolean {
  const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma('busy_timeout = 0');
    const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as CheckpointRow[];
    return row?.busy === 0;
  } catch (error) {
    log.warn({ err: error }, 'WAL checkpoint failed');
    return false;
  } finally {
    db.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

/** Stops when `signal` aborts (the service closing); the timer never keeps the process alive. */
export function scheduleWalCheckpoint(
  db: SqliteDatabase,
  options: { intervalMs: number; signal: AbortSignal; log: FastifyBaseLogger },
): void {
  const timer = setInterval(() => checkpointWal(db, options.log), options.intervalMs);
  timer.unref();
  options.signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}

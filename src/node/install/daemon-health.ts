// Whether the daemon of a just-switched release came up (docs/operations.md "Upgrade"): it records itself in the
// node's database (daemon_state: its pid, when it started, its last tick), so "healthy" is a daemon that started
// after the switch, is alive, and has ticked since. Read straight from the table, read-only: the new version may
// have migrated the database past what this (older) program would open.
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { processIsAlive } from '../host/process-alive.js';

export interface DaemonRecord {
  pid: number | null;
  /** Who starts it again (daemon-state.ts DaemonSupervisor); null: a daemon from before it was recorded. */
  supervisor: string | null;
  startedAt: number | null;
  lastTickAt: number | null;
  stoppedAt: number | null;
}

export function readDaemonRecord(databaseFile: string): DaemonRecord {
  const empty: DaemonRecord = { pid: null, supervisor: null, startedAt: null, lastTickAt: null, stoppedAt: null };
  // A daemon holds the database open, and in WAL mode an open database has its -shm file: without one nobody runs,
  // and opening it here would create files in var/ for nothing (upgrade changes nothing it need not).
  if (!existsSync(databaseFile) || !existsSync(`${databaseFile}-shm`)) return empty;
  let db: Database.Database | undefined;
  try {
    db = new Database(databaseFile, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 2000');
    const rows = db.prepare('SELECT key, value FROM daemon_state').all() as { key: string; value: string }[];
    const state = new Map(rows.map((row) => [row.key, row.value]));
    const time = (key: string) => {
      const value = state.get(key);
      if (value === undefined) return null;
      const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
      return Number.isFinite(ms) ? ms : null;
    };
    const pid = Number(state.get('pid'));
    return {
      pid: Number.isSafeInteger(pid) && pid > 0 ? pid : null,
      supervisor: state.get('supervisor') ?? null,
      startedAt: time('started_at'),
      lastTickAt: time('last_tick_at'),
      stoppedAt: time('stopped_at'),
    };
  } catch {
    return empty;
  } finally {
    db?.close();
  }
}

/** A daemon runs now: its pid is alive and it has not recorded a stop since it started. */
export function daemonAlive(record: DaemonRecord): boolean {
  return (
    record.pid !== null &&
    processIsAlive(record.pid) &&
    (record.stoppedAt === null || (record.startedAt !== null && record.stoppedAt < record.startedAt))
  );
}

/** A daemon started after `since` that is alive and has ticked since it started. */
export function startedHealthy(record: DaemonRecord, since: number): boolean {
  return (
    daemonAlive(record) &&
    record.startedAt !== null &&
    record.startedAt >= since &&
    record.lastTickAt !== null &&
    record.lastTickAt >= record.startedAt
  );
}

/** Waits (polling the table) until a daemon started after `since` is healthy, or `boundMs` passes. */
export async function waitForHealthyDaemon(
  databaseFile: string,
  since: number,
  boundMs: number,
  sleep = defaultSleep,
): Promise<DaemonRecord | undefined> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const record = readDaemonRecord(databaseFile);
    if (startedHealthy(record, since)) return record;
    if (Date.now() >= deadline) return undefined;
    await sleep(250);
  }
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

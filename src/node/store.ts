// The node's local SQLite (issue 3): registrations, the run journal, schedules, the daemon's state. WAL and a busy
// timeout (src/lib/sqlite.ts) let several swarm-node processes and the daemon share it.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { giveToDirectoryOwner } from './files.js';
import { openDatabase, prepared, type SqliteDatabase } from '../lib/sqlite.js';

export const NODE_MIGRATIONS: readonly string[] = [
  /* 1 */ `
  CREATE TABLE registrations (
    agent_id        TEXT PRIMARY KEY,
    every_seconds   INTEGER CHECK (every_seconds IS NULL OR every_seconds >= 1),
    daily_cap_cents INTEGER CHECK (daily_cap_cents IS NULL OR daily_cap_cents >= 0),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );

  -- The run journal. A row is written with its Idempotency-Key BEFORE execute is called, so a crash or a lost
  -- answer leaves a 'pending' row whose key is replayed later: the service charges at most once per row.
  CREATE TABLE runs (
    idempotency_key TEXT PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    source          TEXT NOT NULL CHECK (source IN ('cli', 'wizard', 'daemon')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'insufficient_balance')),
    run_id          TEXT UNIQUE,
    charged_cents   INTEGER NOT NULL DEFAULT 0 CHECK (charged_cents >= 0),
    balance_cents   INTEGER,
    price_cents     INTEGER NOT NULL,
    error_code      TEXT,
    output_json     TEXT,
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER
  );
  CREATE INDEX runs_by_agent ON runs (agent_id, started_at);
  CREATE INDEX runs_by_time ON runs (started_at);
  CREATE INDEX runs_pending ON runs (status) WHERE status = 'pending';

  CREATE TABLE schedules (
    agent_id      TEXT PRIMARY KEY REFERENCES registrations (agent_id) ON DELETE CASCADE,
    next_run_at   INTEGER,
    last_run_at   INTEGER,
    paused_reason TEXT,
    paused_until  INTEGER
  );

  CREATE TABLE daemon_state (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  `,
  /* 2 */ `
  -- Whose run it is, and which process is waiting for its answer: a pending row is replayed only with its own
  -- user's token (keys are per user at the service), and not while the process that wrote it is still alive.
  ALTER TABLE runs ADD COLUMN user_id TEXT;
  ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
  `,
];

/**
 * Opens (creating or migrating) the node's database. Before a migration the file is copied aside with VACUUM INTO,
 * which is consistent even while the daemon writes (a plain copy can miss pages still in the WAL).
 */
export function openNodeStore(path: string): SqliteDatabase {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const existed = existsSync(path);
  const db = openDatabase(path, {
    migrations: NODE_MIGRATIONS,
    beforeMigrate: (open, from) => {
      if (from === 0) return;
      const backups = join(directory, 'backups');
      mkdirSync(backups, { recursive: true, mode: 0o700 });
      const target = join(backups, `swarm-node.db.schema-v${from}.${new Date().toISOString().replace(/[:.]/g, '-')}`);
      open.prepare('VACUUM INTO ?').run(target);
      chmodSync(target, 0o600);
    },
  });
  if (!existed) giveToDirectoryOwner(directory, [path, `${path}-wal`, `${path}-shm`]);
  return db;
}

export interface Registration {
  agent_id: string;
  every_seconds: number | null;
  daily_cap_cents: number | null;
  created_at: number;
  updated_at: number;
}

export type RunStatus = 'pending' | 'succeeded' | 'failed' | 'insufficient_balance';
export type RunSource = 'cli' | 'wizard' | 'daemon';

export interface JournalRun {
  idempotency_key: string;
  agent_id: string;
  source: RunSource;
  status: RunStatus;
  run_id: string | null;
  charged_cents: number;
  balance_cents: number | null;
  price_cents: number;
  error_code: string | null;
  output_json: string | null;
  started_at: number;
  finished_at: number | null;
  user_id: string | null;
  owner_pid: number | null;
}

export function upsertRegistration(
  db: SqliteDatabase,
  registration: { agent_id: string; every_seconds: number | null; daily_cap_cents: number | null },
  now: number,
): { created: boolean; registration: Registration } {
  return db.transaction(() => {
    const existed = prepared(db, 'SELECT 1 FROM registrations WHERE agent_id = ?').get(registration.agent_id) !== undefined;
    prepared(db, `INSERT INTO registrations (agent_id, every_seconds, daily_cap_cents, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (agent_id) DO UPDATE SET every_seconds = excluded.every_seconds,
         daily_cap_cents = excluded.daily_cap_cents, updated_at = excluded.updated_at`,
    ).run(registration.agent_id, registration.every_seconds, registration.daily_cap_cents, now, now);
    // A schedule written now (the daemon picks it up at its next tick) plans from the agent's last run, by hand, by
    // the wizard or by the daemon: one interval after it, or now when that has passed. Planning from now charged a
    // second run at once after the wizard's first. Pauses are lifted: a new cap or schedule is a fresh decision.
    const lastRun = registration.every_seconds === null ? undefined : lastRunStartedAt(db, registration.agent_id);
    const next =
      registration.every_seconds === null ? null : lastRun === undefined ? now : Math.max(now, lastRun + registration.every_seconds * 1000);
    prepared(db, `INSERT INTO schedules (agent_id, next_run_at, last_run_at) VALUES (?, ?, ?)
       ON CONFLICT (agent_id) DO UPDATE SET next_run_at = excluded.next_run_at, paused_reason = NULL, paused_until = NULL,
         last_run_at = COALESCE(MAX(schedules.last_run_at, excluded.last_run_at), schedules.last_run_at, excluded.last_run_at)`,
    ).run(registration.agent_id, next, lastRun ?? null);
    return { created: !existed, registration: getRegistration(db, registration.agent_id)! };
  }).immediate();
}

/**
 * When the agent last ran or may have run: the start of its latest journal row that succeeded or is still pending
 * (a failed or refused run was not charged, and does not count).
 */
export function lastRunStartedAt(db: SqliteDatabase, agentId: string): number | undefined {
  const sql = `SELECT MAX(started_at) AS at FROM runs WHERE agent_id = ? AND status IN ('succeeded', 'pending')`;
  return prepared<[string], { at: number | null }>(db, sql).get(agentId)?.at ?? undefined;
}

/**
 * A run that succeeded, made by hand or by the wizard, is the agent's run for its interval: a schedule records it
 * as its last run and plans the next one an interval after its start, never earlier than already planned.
 */
export function planAfterRun(db: SqliteDatabase, agentId: string, startedAt: number): void {
  prepared(
    db,
    `UPDATE schedules SET last_run_at = COALESCE(MAX(last_run_at, ?), ?),
       next_run_at = MAX(COALESCE(next_run_at, 0), ? + 1000 * (SELECT every_seconds FROM registrations WHERE agent_id = ?))
     WHERE agent_id = ? AND (SELECT every_seconds FROM registrations WHERE agent_id = ?) IS NOT NULL`,
  ).run(startedAt, startedAt, startedAt, agentId, agentId, agentId);
}

export function getRegistration(db: SqliteDatabase, agentId: string): Registration | undefined {
  return prepared<[string], Registration>(db, 'SELECT * FROM registrations WHERE agent_id = ?').get(agentId);
}

export function listRegistrations(db: SqliteDatabase): Registration[] {
  return prepared<[], Registration>(db, 'SELECT * FROM registrations ORDER BY agent_id').all();
}

export function deleteRegistration(db: SqliteDatabase, agentId: string): boolean {
  return prepared(db, 'DELETE FROM registrations WHERE agent_id = ?').run(agentId).changes === 1;
}

/** Writes the journal row before the call (exactly-once billing rests on this order). */
export function journalRunStarted(
  db: SqliteDatabase,
  run: { idempotency_key: string; agent_id: string; source: RunSource; price_cents: number; user_id?: string; owner_pid?: number },
  now: number,
): void {
  prepared(db, `INSERT INTO runs (idempotency_key, agent_id, source, status, price_cents, started_at, user_id, owner_pid)
     VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)`,
  ).run(run.idempotency_key, run.agent_id, run.source, run.price_cents, now, run.user_id ?? null, run.owner_pid ?? null);
}

export function journalRunSettled(
  db: SqliteDatabase,
  settlement: {
    idempotency_key: string;
    status: Exclude<RunStatus, 'pending'>;
    run_id?: string | null;
    charged_cents?: number;
    balance_cents?: number | null;
    error_code?: string | null;
    output?: unknown;
  },
  now: number,
): void {
  prepared(db, `UPDATE runs SET status = ?, run_id = ?, charged_cents = ?, balance_cents = ?, error_code = ?, output_json = ?, finished_at = ?
     WHERE idempotency_key = ?`,
  ).run(
    settlement.status,
    settlement.run_id ?? null,
    settlement.charged_cents ?? 0,
    settlement.balance_cents ?? null,
    settlement.error_code ?? null,
    settlement.output === undefined ? null : JSON.stringify(settlement.output),
    now,
    settlement.idempotency_key,
  );
}

export function pendingRuns(db: SqliteDatabase, agentId?: string): JournalRun[] {
  return agentId === undefined
    ? prepared<[], JournalRun>(db, `SELECT * FROM runs WHERE status = 'pending' ORDER BY started_at`).all()
    : prepared<[string], JournalRun>(db, `SELECT * FROM runs WHERE status = 'pending' AND agent_id = ? ORDER BY started_at`).all(agentId);
}

/** Cents charged for an agent since `sinceMs` (the daily cap counts these). */
export function spentSince(db: SqliteDatabase, agentId: string, sinceMs: number): number {
  const row = prepared<[string, number], { total: number | null }>(db, 'SELECT SUM(charged_cents) AS total FROM runs WHERE agent_id = ? AND started_at >= ?')
    .get(agentId, sinceMs);
  return row?.total ?? 0;
}

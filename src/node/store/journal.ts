// The run journal (table `runs`, docs/decisions/0008-execute-debits-atomically.md): every run is written here with
// its Idempotency-Key before execute is called and settled from the answer; a row left `pending` is replayed with
// its own key. All SQL on `runs` is in this module.
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';

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
  node_id: string | null;
  input_json: string | null;
  /** The labels the run required (a JSON array); null: none. */
  labels_json: string | null;
}

/** Writes the journal row before the call (exactly-once billing rests on this order). */
export function journalRunStarted(
  db: SqliteDatabase,
  run: {
    idempotency_key: string;
    agent_id: string;
    source: RunSource;
    price_cents: number;
    user_id?: string;
    owner_pid?: number;
    input?: unknown;
    labels?: readonly string[];
  },
  now: number,
): void {
  prepared(
    db,
    `INSERT INTO runs (idempotency_key, agent_id, source, status, price_cents, started_at, user_id, owner_pid, input_json, labels_json)
     VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)`,
  ).run(
    run.idempotency_key,
    run.agent_id,
    run.source,
    run.price_cents,
    now,
    run.user_id ?? null,
    run.owner_pid ?? null,
    run.input === undefined ? null : JSON.stringify(run.input),
    run.labels === undefined || run.labels.length === 0 ? null : JSON.stringify(run.labels),
  );
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
    node_id?: string | null;
  },
  now: number,
): void {
  prepared(
    db,
    `UPDATE runs SET status = ?, run_id = ?, node_id = ?, charged_cents = ?, balance_cents = ?, error_code = ?, output_json = ?, finished_at = ?
     WHERE idempotency_key = ?`,
  ).run(
    settlement.status,
    settlement.run_id ?? null,
    settlement.node_id ?? null,
    settlement.charged_cents ?? 0,
    settlement.balance_cents ?? null,
    settlement.error_code ?? null,
    settlement.output === undefined ? null : JSON.stringify(settlement.output),
    now,
    settlement.idempotency_key,
  );
}

export function pendingRuns(db: SqliteDatabase): JournalRun[] {
  return prepared<[], JournalRun>(db, `SELECT * FROM runs WHERE status = 'pending' ORDER BY started_at`).all();
}

/**
 * When the agent last ran or may have run: the start of its latest journal row that succeeded or is still pending
 * (a failed or refused run was not charged, and does not count).
 */
export function lastRunStartedAt(db: SqliteDatabase, agentId: string): number | undefined {
  const sql = `SELECT MAX(started_at) AS at FROM runs WHERE agent_id = ? AND status IN ('succeeded', 'pending')`;
  return prepared<[string], { at: number | null }>(db, sql).get(agentId)?.at ?? undefined;
}

/** The agent's latest journal row, whatever became of it (`list` shows it). */
export function lastRun(db: SqliteDatabase, agentId: string): { started_at: number; status: RunStatus } | undefined {
  return prepared<[string], { started_at: number; status: RunStatus }>(
    db,
    'SELECT started_at, status FROM runs WHERE agent_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1',
  ).get(agentId);
}

/**
 * What an agent spent since `sinceMs`: cents charged (what `list` shows for today), and the prices of runs still
 * waiting for their answer, which may yet be charged (the daemon's daily cap counts both).
 */
export function spendSince(db: SqliteDatabase, agentId: string, sinceMs: number): { chargedCents: number; pendingCents: number } {
  const row = prepared<[string, number], { charged: number | null; pending: number | null }>(
    db,
    `SELECT SUM(charged_cents) AS charged, SUM(CASE status WHEN 'pending' THEN price_cents ELSE 0 END) AS pending
     FROM runs WHERE agent_id = ? AND started_at >= ?`,
  ).get(agentId, sinceMs);
  return { chargedCents: row?.charged ?? 0, pendingCents: row?.pending ?? 0 };
}

export interface SettledRun {
  idempotency_key: string;
  agent_id: string;
  status: string;
  run_id: string | null;
  charged_cents: number;
  error_code: string | null;
}

/** Those of `keys` that are no longer pending, with their outcome. */
export function settledAmong(db: SqliteDatabase, keys: string[]): SettledRun[] {
  const find = prepared<[string], SettledRun>(
    db,
    `SELECT idempotency_key, agent_id, status, run_id, charged_cents, error_code FROM runs WHERE idempotency_key = ? AND status != 'pending'`,
  );
  return keys.map((key) => find.get(key)).filter((run): run is SettledRun => run !== undefined);
}

/**
 * Marks a pending row as awaited by no process (owner_pid NULL), so a settlement replays it: its writer has given
 * up on the answer (runAgent returned without one), or was the previous daemon (one daemon at a time: not alive).
 */
export function releaseRun(db: SqliteDatabase, idempotencyKey: string): void {
  prepared(db, `UPDATE runs SET owner_pid = NULL WHERE idempotency_key = ? AND status = 'pending'`).run(idempotencyKey);
}

export function releaseRunsOf(db: SqliteDatabase, ownerPid: number): number {
  return prepared(db, `UPDATE runs SET owner_pid = NULL WHERE owner_pid = ? AND status = 'pending'`).run(ownerPid).changes;
}

/**
 * A writer waits for its answer at most the client's deadline (timeout_seconds, at most 600 s): a row older than
 * `olderThanMs` is no longer awaited, even when its pid now belongs to another process (pids are reused).
 */
export function releaseAbandonedRuns(db: SqliteDatabase, olderThanMs: number): number {
  return prepared(db, `UPDATE runs SET owner_pid = NULL WHERE status = 'pending' AND owner_pid IS NOT NULL AND started_at < ?`).run(
    olderThanMs,
  ).changes;
}

/** A run of this agent for this user still waits for its answer (or its replay): the agent is not started again. */
export function hasUnsettledRun(db: SqliteDatabase, agentId: string, userId: string): boolean {
  const sql = `SELECT 1 FROM runs WHERE status = 'pending' AND agent_id = ? AND (user_id IS NULL OR lower(user_id) = lower(?)) LIMIT 1`;
  return prepared(db, sql).get(agentId, userId) !== undefined;
}

export interface RunRow {
  run_id: string | null;
  agent_id: string;
  status: RunStatus;
  charged_cents: number;
  balance_cents: number | null;
  error_code: string | null;
  source: string;
  idempotency_key: string;
  started_at: string;
  finished_at: string | null;
}

export interface RunTotals {
  runs: number;
  charged_cents: number;
  by_status: Record<RunStatus, number>;
}

/** `runs`: the journal newest first, at most `limit` rows, with totals over every row that matches. */
export function runHistory(db: SqliteDatabase, filter: { agentId?: string; limit: number }): { runs: RunRow[]; totals: RunTotals } {
  const where = filter.agentId === undefined ? '' : 'WHERE agent_id = @agent';
  const params = filter.agentId === undefined ? {} : { agent: filter.agentId };
  const rows = db
    .prepare<Record<string, unknown>, Omit<RunRow, 'started_at' | 'finished_at'> & { started_at: number; finished_at: number | null }>(
      `SELECT run_id, agent_id, status, charged_cents, balance_cents, error_code, source, idempotency_key, started_at, finished_at
       FROM runs ${where} ORDER BY started_at DESC, rowid DESC LIMIT @limit`,
    )
    .all({ ...params, limit: filter.limit });
  const totals: RunTotals = { runs: 0, charged_cents: 0, by_status: { succeeded: 0, failed: 0, insufficient_balance: 0, pending: 0 } };
  // From the totals the journal's triggers keep (migration 5), not a scan of every row.
  const grouped = db
    .prepare<Record<string, unknown>, { status: RunStatus; count: number; charged: number }>(
      `SELECT status, SUM(runs) AS count, SUM(charged_cents) AS charged FROM run_totals ${where} GROUP BY status HAVING SUM(runs) > 0`,
    )
    .all(params);
  for (const group of grouped) {
    totals.runs += group.count;
    totals.charged_cents += group.charged;
    totals.by_status[group.status] = group.count;
  }
  return {
    runs: rows.map((row) => ({
      ...row,
      started_at: new Date(row.started_at).toISOString(),
      finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
    })),
    totals,
  };
}

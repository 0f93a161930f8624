// What the daemon keeps in the node's database (issue 6 §5): its own state in daemon_state (one key per fact, so
// `status` reads it without the daemon), and each agent's schedule in schedules. The daemon re-reads registrations
// and schedules every tick, so a `register` or `unregister` by the CLI takes effect without a restart.
import { SvcError } from '../../contract/errors.js';
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';
import { processIsAlive } from '../run-agent.js';
import type { AgentPauseReason, ScheduledAgent } from './schedule.js';

export const DAEMON_KEYS = {
  pid: 'pid',
  startedAt: 'started_at',
  lastTickAt: 'last_tick_at',
  version: 'version',
  tickMs: 'tick_ms',
  stoppedAt: 'stopped_at',
  /** Set while no agent runs at all: signed out, token refused, service unreachable. */
  pausedReason: 'paused_reason',
  pausedSince: 'paused_since',
  pausedUntil: 'paused_until',
} as const;

/** A tick older than this (or five ticks) means the daemon is hung or gone, whatever its pid says. */
const STALE_TICK_MS = 15_000;

/** Why every agent is held (the daemon's own state, not a schedule's). */
export type GlobalPauseReason = 'not_signed_in' | 'token_expired' | 'credentials_unreadable' | 'token_rejected' | 'service_unreachable';

function setKeys(db: SqliteDatabase, values: Record<string, string>, now: number): void {
  const upsert = prepared(
    db,
    'INSERT INTO daemon_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
  );
  for (const [key, value] of Object.entries(values)) upsert.run(key, value, now);
}

function deleteKeys(db: SqliteDatabase, keys: string[]): void {
  const remove = prepared(db, 'DELETE FROM daemon_state WHERE key = ?');
  for (const key of keys) remove.run(key);
}

function readKeys(db: SqliteDatabase): Record<string, string> {
  const rows = prepared<[], { key: string; value: string }>(db, 'SELECT key, value FROM daemon_state ORDER BY key').all();
  return Object.fromEntries(rows.map((row) => [row.key, row.value]));
}

/** Milliseconds of a stored time: ISO text (what the daemon writes) or epoch milliseconds. */
function timeOf(value: string | undefined): number | null {
  if (value === undefined) return null;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Whether the recorded daemon is alive: its pid exists, it has not said it stopped, and it ticked recently. */
function recordedDaemonRunning(state: Record<string, string>, now: number): { running: boolean; pid: number | null; lastTick: number | null } {
  const pid = Number(state[DAEMON_KEYS.pid]);
  const hasPid = Number.isSafeInteger(pid) && pid > 0;
  const lastTick = timeOf(state[DAEMON_KEYS.lastTickAt]);
  const startedAt = timeOf(state[DAEMON_KEYS.startedAt]);
  const stoppedAt = timeOf(state[DAEMON_KEYS.stoppedAt]);
  const tickMs = Number(state[DAEMON_KEYS.tickMs]);
  const staleAfter = Math.max(STALE_TICK_MS, Number.isFinite(tickMs) ? tickMs * 5 : 0);
  const stopped = stoppedAt !== null && (startedAt === null || stoppedAt >= startedAt);
  const fresh = lastTick !== null && now - lastTick <= staleAfter;
  return { running: hasPid && !stopped && fresh && processIsAlive(pid), pid: hasPid ? pid : null, lastTick };
}

/**
 * Records this process as the node's daemon. A second daemon on the same database would run every agent twice
 * (never charged twice, but run twice), so a live one that still ticks is refused.
 */
export function claimDaemon(db: SqliteDatabase, self: { pid: number; version: string; tickMs: number }, now: number): { previousPid: number | null } {
  return db.transaction(() => {
    const state = readKeys(db);
    const recorded = recordedDaemonRunning(state, now);
    if (recorded.running && recorded.pid !== self.pid) {
      throw new SvcError('local_state', `a swarm-node daemon is already running for this node (pid ${recorded.pid})`, {
        remedy: 'Stop it first (systemctl stop svc-swarm-node), or leave it running: one daemon per node.',
      });
    }
    deleteKeys(db, [DAEMON_KEYS.stoppedAt, DAEMON_KEYS.pausedReason, DAEMON_KEYS.pausedSince, DAEMON_KEYS.pausedUntil]);
    const at = new Date(now).toISOString();
    setKeys(
      db,
      { [DAEMON_KEYS.pid]: String(self.pid), [DAEMON_KEYS.startedAt]: at, [DAEMON_KEYS.lastTickAt]: at, [DAEMON_KEYS.version]: self.version, [DAEMON_KEYS.tickMs]: String(self.tickMs) },
      now,
    );
    return { previousPid: recorded.pid === self.pid ? null : recorded.pid };
  }).immediate();
}

export function recordTick(db: SqliteDatabase, now: number): void {
  setKeys(db, { [DAEMON_KEYS.lastTickAt]: new Date(now).toISOString() }, now);
}

export function recordStopped(db: SqliteDatabase, now: number): void {
  setKeys(db, { [DAEMON_KEYS.stoppedAt]: new Date(now).toISOString() }, now);
}

export function recordGlobalPause(db: SqliteDatabase, pause: { reason: GlobalPauseReason; since: number; until: number | null } | null, now: number): void {
  if (pause === null) {
    deleteKeys(db, [DAEMON_KEYS.pausedReason, DAEMON_KEYS.pausedSince, DAEMON_KEYS.pausedUntil]);
    return;
  }
  setKeys(db, { [DAEMON_KEYS.pausedReason]: pause.reason, [DAEMON_KEYS.pausedSince]: new Date(pause.since).toISOString() }, now);
  if (pause.until === null) deleteKeys(db, [DAEMON_KEYS.pausedUntil]);
  else setKeys(db, { [DAEMON_KEYS.pausedUntil]: new Date(pause.until).toISOString() }, now);
}

/** Registrations with an interval and their schedules, as they are in the database now. */
export function scheduledAgents(db: SqliteDatabase): ScheduledAgent[] {
  return prepared<[], ScheduledAgent>(
    db,
    `SELECT r.agent_id, r.every_seconds, r.daily_cap_cents, s.next_run_at, s.last_run_at, s.paused_reason, s.paused_until
     FROM registrations r LEFT JOIN schedules s ON s.agent_id = r.agent_id
     WHERE r.every_seconds IS NOT NULL ORDER BY r.agent_id`,
  ).all();
}

/** A run starts: it is the last run, and the next one is planned from now. */
export function recordRunStarted(db: SqliteDatabase, agentId: string, startedAt: number, nextRunAt: number): void {
  prepared(
    db,
    `INSERT INTO schedules (agent_id, next_run_at, last_run_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM registrations WHERE agent_id = ?)
     ON CONFLICT (agent_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_run_at = excluded.last_run_at`,
  ).run(agentId, nextRunAt, startedAt, agentId);
}

/**
 * A replayed run that the service has now run counts as this interval's run: the next one is planned from now
 * (never earlier than already planned), so recovering from a crash or an outage does not run an agent twice in a row.
 */
export function planAfterReplayedRun(db: SqliteDatabase, agentId: string, now: number): void {
  prepared(
    db,
    `UPDATE schedules SET last_run_at = ?,
       next_run_at = MAX(COALESCE(next_run_at, 0), ? + 1000 * (SELECT every_seconds FROM registrations WHERE agent_id = ?))
     WHERE agent_id = ? AND (SELECT every_seconds FROM registrations WHERE agent_id = ?) IS NOT NULL`,
  ).run(now, now, agentId, agentId, agentId);
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

/** Plans the next run at `at` (now: a schedule without a planned time, or without a row, runs at once). */
export function planRunAt(db: SqliteDatabase, agentId: string, at: number): void {
  prepared(
    db,
    `INSERT INTO schedules (agent_id, next_run_at) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM registrations WHERE agent_id = ?)
     ON CONFLICT (agent_id) DO UPDATE SET next_run_at = excluded.next_run_at`,
  ).run(agentId, at, agentId);
}

export function pauseAgent(db: SqliteDatabase, agentId: string, reason: AgentPauseReason, until: number): void {
  prepared(db, 'UPDATE schedules SET paused_reason = ?, paused_until = ? WHERE agent_id = ?').run(reason, until, agentId);
}

/** Resumed: it runs at the next tick when its time has come (a paused agent's missed runs are not caught up). */
export function resumeAgent(db: SqliteDatabase, agentId: string): void {
  prepared(db, 'UPDATE schedules SET paused_reason = NULL, paused_until = NULL WHERE agent_id = ?').run(agentId);
}

/**
 * What counts against the daily cap since `sinceMs`: cents charged (as `list` counts them), and the prices of runs
 * still waiting for their answer, which may yet be charged.
 */
export function capUsageSince(db: SqliteDatabase, agentId: string, sinceMs: number): { chargedCents: number; pendingCents: number } {
  const row = prepared<[string, number], { charged: number | null; pending: number | null }>(
    db,
    `SELECT SUM(charged_cents) AS charged, SUM(CASE status WHEN 'pending' THEN price_cents ELSE 0 END) AS pending
     FROM runs WHERE agent_id = ? AND started_at >= ?`,
  ).get(agentId, sinceMs);
  return { chargedCents: row?.charged ?? 0, pendingCents: row?.pending ?? 0 };
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
  return prepared(db, `UPDATE runs SET owner_pid = NULL WHERE status = 'pending' AND owner_pid IS NOT NULL AND started_at < ?`).run(olderThanMs).changes;
}

/** A run of this agent for this user still waits for its answer (or its replay): the agent is not started again. */
export function hasUnsettledRun(db: SqliteDatabase, agentId: string, userId: string): boolean {
  const sql = `SELECT 1 FROM runs WHERE status = 'pending' AND agent_id = ? AND (user_id IS NULL OR lower(user_id) = lower(?)) LIMIT 1`;
  return prepared(db, sql).get(agentId, userId) !== undefined;
}

export interface AgentSchedule {
  agent_id: string;
  every_seconds: number;
  next_run_at: string | null;
  last_run_at: string | null;
  paused_reason: string | null;
  paused_until: string | null;
}

export interface DaemonStatus {
  /** The recorded pid is alive, the daemon did not record a stop, and it ticked recently. */
  running: boolean;
  pid: number | null;
  version: string | null;
  started_at: string | null;
  last_tick_at: string | null;
  stopped_at: string | null;
  /** Set when no agent runs at all, and why. */
  paused: { reason: string; since: string | null; until: string | null } | null;
  /** Every agent with an interval: when it runs next, and whether it is paused, why and until when. */
  agents: AgentSchedule[];
  state: Record<string, string>;
}

export function readDaemonStatus(db: SqliteDatabase, now: number): DaemonStatus {
  const state = readKeys(db);
  const recorded = recordedDaemonRunning(state, now);
  const pausedReason = state[DAEMON_KEYS.pausedReason];
  return {
    running: recorded.running,
    pid: recorded.pid,
    version: state[DAEMON_KEYS.version] ?? null,
    started_at: isoOrNull(timeOf(state[DAEMON_KEYS.startedAt])),
    last_tick_at: isoOrNull(recorded.lastTick),
    stopped_at: isoOrNull(timeOf(state[DAEMON_KEYS.stoppedAt])),
    paused:
      pausedReason === undefined || !recorded.running
        ? null
        : { reason: pausedReason, since: isoOrNull(timeOf(state[DAEMON_KEYS.pausedSince])), until: isoOrNull(timeOf(state[DAEMON_KEYS.pausedUntil])) },
    agents: scheduledAgents(db).map((agent) => ({
      agent_id: agent.agent_id,
      every_seconds: agent.every_seconds,
      next_run_at: isoOrNull(agent.next_run_at),
      last_run_at: isoOrNull(agent.last_run_at),
      paused_reason: agent.paused_reason,
      paused_until: isoOrNull(agent.paused_until),
    })),
    state,
  };
}

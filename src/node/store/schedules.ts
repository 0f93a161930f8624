// Each scheduled agent's plan (table `schedules`): when it runs next, when it last ran, and whether it
// is paused, why and until when. The daemon reads it every tick, so a `register` by the CLI applies at once.
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';

/** Why an agent is not run for now; written to schedules.paused_reason. */
export type AgentPauseReason = 'insufficient_balance' | 'daily_cap' | 'budget';

/** A registration with an interval, joined with its schedule row. */
export interface ScheduledAgent {
  agent_id: string;
  every_seconds: number;
  daily_cap_cents: number | null;
  next_run_at: number | null;
  last_run_at: number | null;
  paused_reason: string | null;
  paused_until: number | null;
}

/** Registrations with an interval the daemon still keeps itself (not moved to the service), and their plans now. */
export function scheduledAgents(db: SqliteDatabase): ScheduledAgent[] {
  return prepared<[], ScheduledAgent>(
    db,
    `SELECT r.agent_id, r.every_seconds, r.daily_cap_cents, s.next_run_at, s.last_run_at, s.paused_reason, s.paused_until
     FROM registrations r LEFT JOIN schedules s ON s.agent_id = r.agent_id
     WHERE r.every_seconds IS NOT NULL AND r.schedule_id IS NULL ORDER BY r.agent_id`,
  ).all();
}

export function scheduleOf(db: SqliteDatabase, agentId: string): { next_run_at: number | null; paused_reason: string | null } | undefined {
  return prepared<[string], { next_run_at: number | null; paused_reason: string | null }>(
    db,
    'SELECT next_run_at, paused_reason FROM schedules WHERE agent_id = ?',
  ).get(agentId);
}

/**
 * The schedule of a registration just written: planned at `nextRunAt`, its pauses lifted (a new cap or schedule is
 * a fresh decision), and its last run kept or moved to `lastRunAt` when that is later.
 */
export function planRegistered(db: SqliteDatabase, agentId: string, nextRunAt: number | null, lastRunAt: number | null): void {
  prepared(
    db,
    `INSERT INTO schedules (agent_id, next_run_at, last_run_at) VALUES (?, ?, ?)
     ON CONFLICT (agent_id) DO UPDATE SET next_run_at = excluded.next_run_at, paused_reason = NULL, paused_until = NULL,
       last_run_at = COALESCE(MAX(schedules.last_run_at, excluded.last_run_at), schedules.last_run_at, excluded.last_run_at)`,
  ).run(agentId, nextRunAt, lastRunAt);
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

/** A run starts: it is the last run, and the next one is planned from now. */
export function recordRunStarted(db: SqliteDatabase, agentId: string, startedAt: number, nextRunAt: number): void {
  prepared(
    db,
    `INSERT INTO schedules (agent_id, next_run_at, last_run_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM registrations WHERE agent_id = ?)
     ON CONFLICT (agent_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_run_at = excluded.last_run_at`,
  ).run(agentId, nextRunAt, startedAt, agentId);
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

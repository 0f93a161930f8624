// What the daemon records about itself (table `daemon_state`): one key per fact, so `status` reads it
// without the daemon. Also who the daemon is: one per node, claimed at start.
import { SvcError } from '../../contract/errors.js';
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';
import { processIsAlive } from '../host/process-alive.js';
import { unmovedIntervals } from './schedules.js';

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
  /** Who starts the daemon again when it exits (DaemonSupervisor): what `upgrade` does without systemd depends on it. */
  supervisor: 'supervisor',
  /** Since when the service has said this node is drained (docs/api.md "Draining a node"); absent: it was not. */
  drainedSince: 'drained_since',
} as const;

/**
 * Who starts the daemon again when it exits: systemd (its unit), a supervisor the operator named with `daemon
 * --supervised` (a container's restart policy, supervisord, runit), or nobody (started by hand: `upgrade` restarts
 * it itself, as it was started).
 */
export type DaemonSupervisor = 'systemd' | 'declared' | 'none';

/** A tick older than this (or five ticks) means the daemon is hung or gone, whatever its pid says. */
const STALE_TICK_MS = 15_000;

/** Why every agent is held (the daemon's own state, not a schedule's). */
export type GlobalPauseReason = 'not_enrolled' | 'credentials_unreadable' | 'credential_rejected' | 'service_unreachable';

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
function recordedDaemonRunning(
  state: Record<string, string>,
  now: number,
): { running: boolean; pid: number | null; lastTick: number | null } {
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
export function claimDaemon(
  db: SqliteDatabase,
  self: { pid: number; version: string; tickMs: number; supervisor?: DaemonSupervisor },
  now: number,
): { previousPid: number | null } {
  return db
    .transaction(() => {
      const state = readKeys(db);
      const recorded = recordedDaemonRunning(state, now);
      if (recorded.running && recorded.pid !== self.pid) {
        throw new SvcError('local_state', `a swarm-node daemon is already running for this node (pid ${recorded.pid})`, {
          remedy: 'Stop it first (systemctl stop svc-swarm-node), or leave it running: one daemon per node.',
        });
      }
      deleteKeys(db, [
        DAEMON_KEYS.stoppedAt,
        DAEMON_KEYS.pausedReason,
        DAEMON_KEYS.pausedSince,
        DAEMON_KEYS.pausedUntil,
        DAEMON_KEYS.drainedSince,
      ]);
      const at = new Date(now).toISOString();
      setKeys(
        db,
        {
          [DAEMON_KEYS.pid]: String(self.pid),
          [DAEMON_KEYS.startedAt]: at,
          [DAEMON_KEYS.lastTickAt]: at,
          [DAEMON_KEYS.version]: self.version,
          [DAEMON_KEYS.tickMs]: String(self.tickMs),
          [DAEMON_KEYS.supervisor]: self.supervisor ?? 'none',
        },
        now,
      );
      return { previousPid: recorded.pid === self.pid ? null : recorded.pid };
    })
    .immediate();
}

export function recordTick(db: SqliteDatabase, now: number): void {
  setKeys(db, { [DAEMON_KEYS.lastTickAt]: new Date(now).toISOString() }, now);
}

/** What the service's last poll answer said of the drain: written only when it changes. */
export function recordDrained(db: SqliteDatabase, drained: boolean, now: number): void {
  if (!drained) deleteKeys(db, [DAEMON_KEYS.drainedSince]);
  else setKeys(db, { [DAEMON_KEYS.drainedSince]: new Date(now).toISOString() }, now);
}

export function recordStopped(db: SqliteDatabase, now: number): void {
  setKeys(db, { [DAEMON_KEYS.stoppedAt]: new Date(now).toISOString() }, now);
}

export function recordGlobalPause(
  db: SqliteDatabase,
  pause: { reason: GlobalPauseReason; since: number; until: number | null } | null,
  now: number,
): void {
  if (pause === null) {
    deleteKeys(db, [DAEMON_KEYS.pausedReason, DAEMON_KEYS.pausedSince, DAEMON_KEYS.pausedUntil]);
    return;
  }
  setKeys(db, { [DAEMON_KEYS.pausedReason]: pause.reason, [DAEMON_KEYS.pausedSince]: new Date(pause.since).toISOString() }, now);
  if (pause.until === null) deleteKeys(db, [DAEMON_KEYS.pausedUntil]);
  else setKeys(db, { [DAEMON_KEYS.pausedUntil]: new Date(pause.until).toISOString() }, now);
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
  /** The intervals an earlier release kept here, not yet moved to the service (the daemon moves them at its start). */
  agents: AgentSchedule[];
  /** Since when the service says its user drained this node (its last poll's word); null: not drained. */
  drained_since: string | null;
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
        : {
            reason: pausedReason,
            since: isoOrNull(timeOf(state[DAEMON_KEYS.pausedSince])),
            until: isoOrNull(timeOf(state[DAEMON_KEYS.pausedUntil])),
          },
    drained_since: recorded.running ? isoOrNull(timeOf(state[DAEMON_KEYS.drainedSince])) : null,
    agents: unmovedIntervals(db).map((agent) => ({
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

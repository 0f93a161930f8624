// What the daemon kept of its own intervals (table `schedules`, written by releases before schedules at the
// service): for each registration with an interval, when it ran last, when it was to run next, and why it was
// paused. The daemon reads it once, to move each interval to the service (agents/schedule-move.ts); nothing
// writes it any more.
import { prepared, type SqliteDatabase } from '../../lib/sqlite.js';
import type { Registration } from './registrations.js';

/** A registration with an interval the daemon kept itself, and its plan. */
export type DaemonKeptInterval = Registration & {
  every_seconds: number;
  next_run_at: number | null;
  last_run_at: number | null;
  paused_reason: string | null;
  paused_until: number | null;
};

/** The intervals not yet moved to the service (their registration has no schedule_id). */
export function unmovedIntervals(db: SqliteDatabase): DaemonKeptInterval[] {
  return prepared<[], DaemonKeptInterval>(
    db,
    `SELECT r.*, s.next_run_at, s.last_run_at, s.paused_reason, s.paused_until FROM registrations r LEFT JOIN schedules s ON s.agent_id = r.agent_id
     WHERE r.every_seconds IS NOT NULL AND r.schedule_id IS NULL ORDER BY r.agent_id`,
  ).all();
}

// The daemon's own intervals move to the service (docs/api.md "Schedules", the one-time move): at its start, each
// registration with an interval becomes a schedule pinned to this node, as the daemon kept it (its interval, even
// under a minute, its cap, its pause for money, its default input, its next planned time). The service fires them
// from then on; the registration keeps the schedule's id. Until the move is answered nothing of them runs here, and
// the daemon asks again: the service's answer to a repeat is the first one, so no schedule is made twice.
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ScheduleMigrationRequest } from '../../contract/schedules.js';
import type { NodeApi } from '../service/node-api.js';
import { recordScheduleId, storedDefaultInput } from '../store/registrations.js';
import { unmovedIntervals } from '../store/schedules.js';

type MovedPause = ScheduleMigrationRequest['registrations'][number]['paused_reason'];

/**
 * The daemon's pauses as the service's: for money they stay paused (and resume there when the money allows); its
 * pause for the day's cap ends with the day, and the service's cap skips what is over it without a pause.
 */
const PAUSE_AT_SERVICE: Record<string, MovedPause> = {
  insufficient_balance: 'insufficient_balance',
  budget: 'budget_exceeded',
  daily_cap: null,
};

export interface ScheduleMove {
  moved: Array<{ agent_id: string; schedule_id: string }>;
  /** Intervals the service made no schedule of: its move was made before they were registered. */
  left: Array<{ agent_id: string; every_seconds: number }>;
}

/** Moves what is not moved yet of the agents the service routes here; undefined when there is nothing to move. */
export async function moveLocalSchedules(db: SqliteDatabase, api: NodeApi, served: readonly string[]): Promise<ScheduleMove | undefined> {
  const unmoved = unmovedIntervals(db).filter((row) => served.includes(row.agent_id));
  if (unmoved.length === 0) return undefined;
  const answer = await api.moveSchedules({
    registrations: unmoved.map((row) => ({
      agent_id: row.agent_id,
      every_seconds: row.every_seconds,
      daily_cap_cents: row.daily_cap_cents,
      paused_reason: row.paused_reason === null ? null : (PAUSE_AT_SERVICE[row.paused_reason] ?? null),
      input: storedDefaultInput(row),
      next_run_at: row.next_run_at === null ? null : new Date(row.next_run_at).toISOString(),
    })),
  });
  const moved: ScheduleMove['moved'] = [];
  const left: ScheduleMove['left'] = [];
  for (const row of unmoved) {
    const made = answer.schedules.find((schedule) => schedule.agent_id === row.agent_id);
    if (made === undefined) {
      left.push({ agent_id: row.agent_id, every_seconds: row.every_seconds });
      continue;
    }
    recordScheduleId(db, row.agent_id, made.schedule_id);
    moved.push(made);
  }
  return { moved, left };
}

// The schedule a registration's --every is (docs/operations.md "Day to day on the host"): a schedule at the service,
// pinned to this node, on the interval, in UTC (the day its cap counts, as before), `buffer_one` (one run of the
// agent at a time, missed occurrences coalesced into one run: what the daemon did), starting from the registration's
// input. The service fires it whether or not a daemon runs here, and queues its runs for this node; the daemon runs
// them as it runs any other. Making or changing it is a standing order to spend: it needs a recent sign-in.
import { SvcError } from '../../contract/errors.js';
import { MIN_INTERVAL_SECONDS, type ScheduleCost } from '../../contract/schedule-terms.js';
import type { ScheduleChange, ScheduleDetail } from '../../contract/schedules.js';
import type { Input } from '../runs/default-input.js';
import { addSchedule, changeSchedule, listSchedules, removeSchedule, showSchedule } from '../service/schedules-api.js';
import type { ServiceClient } from '../service/service-client.js';
import { formatDuration } from './duration.js';

export interface RegistrationScheduleDeps {
  client: ServiceClient;
  token: string;
  node_id: string;
}

/** What the registration asks of its schedule: an interval (null: none) and the input its runs start from. */
export interface WantedSchedule {
  agent_id: string;
  every_seconds: number | null;
  input: Input | null;
}

export interface RegistrationSchedule {
  schedule_id: string;
  next_fire_at: string | null;
  cost: ScheduleCost;
}

/** An interval a new schedule may have: a minute or more apart (the service refuses less). */
export function refuseIntervalUnderAMinute(agentId: string, everySeconds: number | null): void {
  if (everySeconds === null || everySeconds >= MIN_INTERVAL_SECONDS) return;
  throw new SvcError('usage', `--every ${formatDuration(everySeconds)} is too often: a schedule runs at most once a minute`, {
    remedy: `Give 1m or more: swarm-node register ${agentId} --every 1m`,
    extensions: { every_seconds: everySeconds, min_every_seconds: MIN_INTERVAL_SECONDS },
  });
}

/**
 * Makes, changes or removes the registration's schedule at the service so that it is what `wanted` says; returns
 * it (undefined when there is none now). `current` is the id the registration keeps. A schedule of this agent pinned
 * to this node on an interval, which an earlier register made when its answer was lost, is taken up, not doubled.
 */
export async function applyRegistrationSchedule(
  deps: RegistrationScheduleDeps,
  current: string | null,
  wanted: WantedSchedule,
): Promise<RegistrationSchedule | undefined> {
  // Only a schedule to keep is looked for: a removal touches none but the registration's own.
  const existing = current ?? (wanted.every_seconds === null ? null : await pinnedHere(deps, wanted.agent_id));
  if (wanted.every_seconds === null) {
    if (existing !== null) await removeIfThere(deps, existing);
    return undefined;
  }
  const input = wanted.input ?? {};
  if (existing !== null) {
    try {
      const now = await showSchedule(deps.client, deps.token, existing);
      // Only what differs is sent: a schedule the daemon moved keeps its interval under a minute while that stays.
      const change: ScheduleChange = {
        ...(now.interval_seconds === wanted.every_seconds ? {} : { interval_seconds: wanted.every_seconds }),
        ...(JSON.stringify(now.input ?? {}) === JSON.stringify(input) ? {} : { input }),
      };
      // Nothing to change renews no standing order: no sign-in is asked for.
      return viewOf(Object.keys(change).length === 0 ? now : await changeSchedule(deps.client, deps.token, existing, change));
    } catch (error) {
      // Removed at the service meanwhile (swarm-node schedule rm, the console): made again below.
      if (!(error instanceof SvcError && error.code === 'schedule_not_found')) throw error;
    }
  }
  const made = await addSchedule(deps.client, deps.token, {
    agent_id: wanted.agent_id,
    interval_seconds: wanted.every_seconds,
    ...(wanted.input === null ? {} : { input: wanted.input }),
    time_zone: 'UTC',
    overlap: 'buffer_one',
    node_id: deps.node_id,
  });
  return viewOf(made);
}

/** The registration's schedule goes with it; one the service no longer has is gone already. */
export async function removeIfThere(deps: Pick<RegistrationScheduleDeps, 'client' | 'token'>, scheduleId: string): Promise<void> {
  try {
    await removeSchedule(deps.client, deps.token, scheduleId);
  } catch (error) {
    if (!(error instanceof SvcError && error.code === 'schedule_not_found')) throw error;
  }
}

async function pinnedHere(deps: RegistrationScheduleDeps, agentId: string): Promise<string | null> {
  const { schedules } = await listSchedules(deps.client, deps.token);
  const found = schedules.find((s) => s.agent_id === agentId && s.node_id === deps.node_id && s.interval_seconds !== null);
  return found?.schedule_id ?? null;
}

function viewOf(detail: ScheduleDetail): RegistrationSchedule {
  return { schedule_id: detail.schedule_id, next_fire_at: detail.next_fire_at, cost: detail.cost };
}

// A schedule's changes of state as webhook events (docs/api.md "Webhooks", "Schedules"): paused (by the user, for
// money, for failures, a revocation or its node's removal), resumed (by the user, or by itself once a run is covered)
// and skipping (a new record of coalesced skips: once a state, not once an occurrence). Written in the transaction of
// the change for the user's endpoints that take it, as the run events are (webhooks/outbox.ts), and sent by the same
// delivery worker.
import { eventBit, type ScheduleEventPayload, type ScheduleWebhookEvent } from '../../contract/webhooks.js';
import { isoTime } from '../../lib/clock.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { Store } from '../store/store.js';
import { deliveriesOf } from '../webhooks/outbox.js';
import type { ScheduleRow } from './schedule-store.js';

/** The schedule as the event shows it: after the change. */
export interface ScheduleState {
  schedule_id: string;
  user_id: string;
  agent_id: string;
  node_id: string | null;
  paused: boolean;
  pause_reason: string | null;
  next_fire_at: number | null;
}

export function stateOf(
  row: Pick<ScheduleRow, 'schedule_id' | 'user_id' | 'agent_id' | 'node_id' | 'paused' | 'pause_reason' | 'next_fire_at'>,
): ScheduleState {
  return {
    schedule_id: row.schedule_id,
    user_id: row.user_id,
    agent_id: row.agent_id,
    node_id: row.node_id,
    paused: row.paused === 1,
    pause_reason: row.pause_reason,
    next_fire_at: row.next_fire_at,
  };
}

export interface SkipRecord {
  reason: string;
  count: number;
  firstAt: number;
  lastAt: number;
}

/** Records the event; call inside the transaction that made the change. One statement, none without endpoints. */
export async function recordScheduleEvent(
  store: Store,
  now: number,
  event: ScheduleWebhookEvent,
  schedule: ScheduleState,
  skip: SkipRecord | null = null,
): Promise<void> {
  const eventId = timeOrderedId(now);
  const payload: ScheduleEventPayload = {
    id: eventId,
    type: event,
    created: Math.floor(now / 1000),
    data: {
      schedule: {
        schedule_id: schedule.schedule_id,
        agent_id: schedule.agent_id,
        node_id: schedule.node_id,
        paused: schedule.paused,
        pause_reason: schedule.pause_reason,
        next_fire_at: schedule.next_fire_at === null ? null : isoTime(schedule.next_fire_at),
      },
      skip:
        skip === null ? null : { reason: skip.reason, count: skip.count, first_at: isoTime(skip.firstAt), last_at: isoTime(skip.lastAt) },
    },
  };
  await deliveriesOf(store.db, {
    eventId,
    userId: schedule.user_id,
    runId: '',
    scheduleId: schedule.schedule_id,
    eventType: event,
    bit: eventBit(event),
    payload: JSON.stringify(payload),
    now,
  }).execute();
}

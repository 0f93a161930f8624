// A node's one-time move of its daemon's local schedules to the service (docs/api.md "Schedules"). The one thing a
// node credential may make of schedules: each pinned to that node, for an agent it serves, once, as the daemon kept
// it: its interval (even under a minute), UTC (the day its cap counted), its cap, its pause for money, its default
// input, its next planned time, and `buffer_one`, which is what the daemon did (one run at a time, missed ticks
// coalesced into one run). The daemon's charges of today count against the cap, from the service's own runs of that
// node, so the cap holds across the move. A repeat moves nothing and answers what the first made: an answer lost on
// the way is safe to ask again, and a node taken over cannot make more.
import { SvcError } from '../../contract/errors.js';
import { MAX_CATCH_UP_SECONDS, type ScheduleMigrationRequest, type ScheduleMigrationResponse } from '../../contract/schedules.js';
import { isoTime, startOfUtcDay } from '../../lib/clock.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import { localDay } from './fire-times.js';
import { createScheduleStore, type ScheduleRow } from './schedule-store.js';

export function createScheduleMigration(ctx: ServiceContext) {
  const rows = createScheduleStore(ctx.store);

  const answerOf = async (node: EnrolledNode, migratedAt: number): Promise<ScheduleMigrationResponse> => {
    const made = await ctx.store.db
      .selectFrom('schedules')
      .select(['agent_id', 'schedule_id'])
      .where('migrated_from_node', '=', node.node_id)
      .orderBy('agent_id')
      .execute();
    return { migrated_at: isoTime(migratedAt), schedules: made };
  };

  /** What the node's daemon charged today (UTC) for its schedule of the agent: the service's own record of it. */
  const chargedToday = async (node: EnrolledNode, agentId: string, now: number): Promise<number> => {
    const row = await ctx.store.db
      .selectFrom('runs')
      .select((eb) => eb.fn.sum<string | number | null>('charged_cents').as('charged'))
      .where('user_id', '=', node.user_id)
      .where('node_id', '=', node.node_id)
      .where('agent_id', '=', agentId)
      .where('trigger', '=', 'schedule')
      .where('started_at', '>=', startOfUtcDay(now))
      .executeTakeFirst();
    return Number(row?.charged ?? 0);
  };

  return async (node: EnrolledNode, body: ScheduleMigrationRequest, client: ClientSeen): Promise<ScheduleMigrationResponse> => {
    const now = ctx.clock.now();
    const agents = body.registrations.map((registration) => registration.agent_id);
    const twice = agents.find((agent, index) => agents.indexOf(agent) !== index);
    if (twice !== undefined) throw new SvcError('invalid_request', `agent ${twice} is given twice`);
    return ctx.store.lockedTransaction([`schedules:${node.user_id}`], async () => {
      const current = await ctx.store
        .forUpdate(ctx.store.db.selectFrom('nodes').select('schedules_migrated_at').where('node_id', '=', node.node_id))
        .executeTakeFirstOrThrow();
      if (current.schedules_migrated_at !== null) return answerOf(node, current.schedules_migrated_at);
      const served = new Set(
        (await ctx.store.db.selectFrom('node_agents').select('agent_id').where('node_id', '=', node.node_id).execute()).map(
          (r) => r.agent_id,
        ),
      );
      const foreign = agents.find((agent) => !served.has(agent));
      if (foreign !== undefined) {
        throw new SvcError('forbidden', `this node does not serve ${foreign}: a node moves only the schedules of agents it serves`, {
          remedy: `Register it on this node first (swarm-node register ${foreign}), then start the daemon again.`,
        });
      }
      for (const registration of body.registrations) {
        const planned = registration.next_run_at === null ? now : Date.parse(registration.next_run_at);
        // A planned time gone by is due now: the daemon would have run it at once, its missed ticks coalesced.
        const next = Number.isNaN(planned) ? now : Math.max(planned, now);
        const paused = registration.paused_reason !== null;
        const row: ScheduleRow = {
          schedule_id: timeOrderedId(now),
          user_id: node.user_id,
          agent_id: registration.agent_id,
          input_json: registration.input === null ? null : JSON.stringify(registration.input),
          cron: null,
          interval_seconds: registration.every_seconds,
          time_zone: 'UTC',
          overlap: 'buffer_one',
          catch_up_seconds: MAX_CATCH_UP_SECONDS,
          node_id: node.node_id,
          labels_json: '[]',
          daily_cap_cents: registration.daily_cap_cents,
          pause_after_failures: null,
          paused: paused ? 1 : 0,
          pause_reason: registration.paused_reason,
          consecutive_failures: 0,
          next_fire_at: paused ? null : next,
          anchor_at: next,
          // Paused for money: looked at again at the next round, as the daemon's pause would have been.
          recheck_at: paused ? now : null,
          authorized_jti: null,
          migrated_from_node: node.node_id,
          created_at: now,
          updated_at: now,
        };
        await rows.schedules.insert(row);
        const charged = registration.daily_cap_cents === null ? 0 : await chargedToday(node, registration.agent_id, now);
        if (charged > 0) {
          // One settled occurrence without a run carries today's charges (schedule-store.ts spentOn). Its time is
          // before the anchor, where no fire time of the schedule ever falls.
          await ctx.store.db
            .insertInto('schedule_occurrences')
            .values({
              schedule_id: row.schedule_id,
              fire_at: now - 1,
              state: 'settled',
              run_id: null,
              price_cents: charged,
              local_day: localDay(now, 'UTC'),
              claimed_at: now,
            })
            .execute();
        }
        await ctx.audit.record(node.user_id, 'schedule_changed', client, {
          schedule_id: row.schedule_id,
          change: 'migrated',
          agent_id: row.agent_id,
          credential: 'node',
          node_id: node.node_id,
        });
      }
      await ctx.store.db.updateTable('nodes').set({ schedules_migrated_at: now }).where('node_id', '=', node.node_id).execute();
      return answerOf(node, now);
    });
  };
}

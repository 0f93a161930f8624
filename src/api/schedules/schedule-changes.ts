// Making and changing schedules (docs/api.md "Schedules"). A schedule is a standing order to spend: making one,
// changing one, resuming one or raising its cap needs the recent sign-in (auth/step-up.ts), as webhooks do; pausing,
// removing or lowering its cap never does. Every change is audited with the JWT that made it (its jti and sign-in
// time), in the transaction of the change.
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { normalizeLabels } from '../../contract/labels.js';
import { DEFAULT_CATCH_UP_SECONDS, MAX_SCHEDULES_PER_USER, type ScheduleChange, type ScheduleRequest } from '../../contract/schedules.js';
import { raisesLimit } from '../../contract/spending-limits.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import { createAgentPrices } from '../agents/agent-prices.js';
import { createAgentVersions } from '../agents/agent-versions.js';
import { createInputChecks } from '../agents/input-checks.js';
import { requireRecentSignIn } from '../auth/step-up.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import { checkCron, checkTimeZone, nextFireAfter } from './fire-times.js';
import { recordScheduleEvent, stateOf } from './schedule-events.js';
import { createScheduleStore, timingOf, type ScheduleRow } from './schedule-store.js';

const CHANGE_NEEDS = 'this changes a standing order to spend';
/**
 * An interval made here counts from the Unix epoch, as Temporal's intervals do: every 600 s fires at :00, :10, … UTC
 * whenever it was made, and the same times on every instance (docs/decisions/0037-schedules-at-the-service.md).
 */
const INTERVAL_ANCHOR = 0;

/** What a schedule's audit entry says of the JWT that made the change: its jti and when its user last signed in. */
export function auditedCredential(claims: AccessTokenClaims): { credential: 'jwt'; jti: string | null; auth_time: number | null } {
  return { credential: 'jwt', jti: claims.jti ?? null, auth_time: claims.auth_time ?? null };
}

export function createScheduleChanges(ctx: ServiceContext) {
  const rows = createScheduleStore(ctx.store);
  const versions = createAgentVersions(ctx.store);
  const prices = createAgentPrices(ctx.store, versions, ctx.uploadLimits.ownAgentPriceCents);
  const inputs = createInputChecks(versions, ctx.clock);
  /** The agent is one the user may run, and the input one its current version takes (422 input_invalid otherwise). */
  const checkAgentInput = async (userId: string, agentId: string, inputJson: string | null): Promise<void> => {
    await prices.agentFor(userId, agentId);
    const verdict = await inputs.verdict(userId, agentId, inputJson === null ? undefined : JSON.parse(inputJson));
    inputs.pinTo(verdict, userId, verdict.digest);
  };

  const scheduleOf = async (userId: string, scheduleId: string, forUpdate = false): Promise<ScheduleRow> => {
    const row = forUpdate ? await rows.schedules.getForUpdate(scheduleId) : await rows.schedules.get(scheduleId);
    if (row === undefined || row.user_id !== userId)
      throw new SvcError('schedule_not_found', `you have no schedule ${JSON.stringify(scheduleId.slice(0, 64))}`);
    return row;
  };

  /** The timing a request gives: a cron or an interval, one of them. */
  const timingFrom = (body: { cron?: string | undefined; interval_seconds?: number | undefined }) => {
    if ((body.cron === undefined) === (body.interval_seconds === undefined)) {
      throw new SvcError('invalid_schedule', 'a schedule has either cron or interval_seconds, one of them', {
        remedy: 'Give cron ("30 2 * * *", "@hourly") or interval_seconds (at least 60).',
        extensions: { errors: [{ path: '/cron', message: 'cron or interval_seconds, one of them' }] },
      });
    }
    return body.cron !== undefined
      ? { cron: checkCron(body.cron), interval_seconds: null }
      : { cron: null, interval_seconds: body.interval_seconds! };
  };

  const checkNode = async (userId: string, nodeId: string): Promise<void> => {
    const node = await ctx.store.db.selectFrom('nodes').select(['user_id', 'removed_at']).where('node_id', '=', nodeId).executeTakeFirst();
    if (node === undefined || node.user_id !== userId || node.removed_at !== null) {
      throw new SvcError('invalid_schedule', `you have no node ${nodeId} to pin this schedule to`, {
        remedy: 'Pin it to one of your nodes (swarm-node nodes), or to labels.',
        extensions: { errors: [{ path: '/node_id', message: 'no node of yours' }] },
      });
    }
  };

  /** The first fire time from `now`, or 400 when the expression never fires again. */
  const firstFire = (row: Pick<ScheduleRow, 'cron' | 'interval_seconds' | 'time_zone' | 'anchor_at'>, now: number): number => {
    const next = nextFireAfter(timingOf(row), now);
    if (next === null)
      throw new SvcError('invalid_schedule', 'this cron expression never fires again', {
        extensions: { errors: [{ path: '/cron', message: 'never fires' }] },
      });
    return next;
  };

  return {
    rows,
    scheduleOf,
    prices,

    async create(claims: AccessTokenClaims, body: ScheduleRequest, client: ClientSeen): Promise<ScheduleRow> {
      const userId = claims.sub;
      const now = ctx.clock.now();
      const timing = timingFrom(body);
      const timeZone = checkTimeZone(body.time_zone ?? 'UTC');
      await checkAgentInput(userId, body.agent_id, body.input === undefined ? null : JSON.stringify(body.input));
      if (body.node_id !== undefined) await checkNode(userId, body.node_id);
      return ctx.store.lockedTransaction([`schedules:${userId}`], async () => {
        const count = await rows.schedules.countOf(userId);
        if (count >= MAX_SCHEDULES_PER_USER) {
          throw new SvcError('limit_reached', `you keep ${count} schedules, the most one user may`, {
            extensions: { limit: MAX_SCHEDULES_PER_USER },
          });
        }
        const paused = body.paused === true;
        const base = { ...timing, time_zone: timeZone, anchor_at: INTERVAL_ANCHOR };
        const row: ScheduleRow = {
          schedule_id: timeOrderedId(now),
          user_id: userId,
          agent_id: body.agent_id,
          input_json: body.input === undefined ? null : JSON.stringify(body.input),
          ...base,
          overlap: body.overlap ?? 'skip',
          catch_up_seconds: body.catch_up_seconds ?? DEFAULT_CATCH_UP_SECONDS,
          node_id: body.node_id ?? null,
          labels_json: JSON.stringify(normalizeLabels(body.labels ?? [])),
          daily_cap_cents: body.daily_cap_cents ?? null,
          pause_after_failures: body.pause_after_failures ?? null,
          paused: paused ? 1 : 0,
          pause_reason: paused ? 'user' : null,
          consecutive_failures: 0,
          next_fire_at: paused ? null : firstFire(base, now),
          recheck_at: null,
          authorized_jti: claims.jti ?? null,
          migrated_from_node: null,
          created_at: now,
          updated_at: now,
        };
        await rows.schedules.insert(row);
        await ctx.audit.record(userId, 'schedule_changed', client, {
          schedule_id: row.schedule_id,
          change: 'created',
          agent_id: row.agent_id,
          ...auditedCredential(claims),
        });
        return row;
      });
    },

    /** Step-up unless the change only lowers the daily cap. */
    async change(claims: AccessTokenClaims, scheduleId: string, body: ScheduleChange, client: ClientSeen): Promise<ScheduleRow> {
      const userId = claims.sub;
      const now = ctx.clock.now();
      const onlyCap = Object.keys(body).every((key) => key === 'daily_cap_cents');
      return ctx.store.transaction(async () => {
        const row = await scheduleOf(userId, scheduleId, true);
        if (!onlyCap || raisesLimit(row.daily_cap_cents, body.daily_cap_cents ?? null)) requireRecentSignIn(claims, now, CHANGE_NEEDS);
        const next: ScheduleRow = { ...row, updated_at: now };
        if (body.cron !== undefined || body.interval_seconds !== undefined) {
          Object.assign(next, timingFrom(body));
          next.anchor_at = INTERVAL_ANCHOR;
        }
        if (body.time_zone !== undefined) next.time_zone = checkTimeZone(body.time_zone);
        if (body.agent_id !== undefined) next.agent_id = body.agent_id;
        if (body.input !== undefined) next.input_json = JSON.stringify(body.input);
        if (body.agent_id !== undefined || body.input !== undefined) await checkAgentInput(userId, next.agent_id, next.input_json);
        if (body.overlap !== undefined) next.overlap = body.overlap;
        if (body.catch_up_seconds !== undefined) next.catch_up_seconds = body.catch_up_seconds;
        if (body.node_id !== undefined) {
          if (body.node_id !== null) await checkNode(userId, body.node_id);
          next.node_id = body.node_id;
        }
        if (body.labels !== undefined) next.labels_json = JSON.stringify(normalizeLabels(body.labels));
        if (body.daily_cap_cents !== undefined) next.daily_cap_cents = body.daily_cap_cents;
        if (body.pause_after_failures !== undefined) next.pause_after_failures = body.pause_after_failures;
        if (next.paused === 0) next.next_fire_at = firstFire(next, now);
        await rows.schedules.update(scheduleId, next);
        await ctx.audit.record(userId, 'schedule_changed', client, {
          schedule_id: scheduleId,
          change: 'changed',
          fields: Object.keys(body).sort(),
          ...auditedCredential(claims),
        });
        return next;
      });
    },

    async pause(claims: AccessTokenClaims, scheduleId: string, client: ClientSeen): Promise<ScheduleRow> {
      return ctx.store.transaction(async () => {
        const row = await scheduleOf(claims.sub, scheduleId, true);
        const next = { ...row, paused: 1, pause_reason: 'user', next_fire_at: null, recheck_at: null, updated_at: ctx.clock.now() };
        await rows.schedules.update(scheduleId, next);
        if (row.paused === 0 || row.pause_reason !== 'user')
          await recordScheduleEvent(ctx.store, next.updated_at, 'schedule.paused', stateOf(next));
        await ctx.audit.record(claims.sub, 'schedule_changed', client, {
          schedule_id: scheduleId,
          change: 'paused',
          ...auditedCredential(claims),
        });
        return next;
      });
    },

    /** Occurrences missed while it was paused are not made up: it goes on from its next fire time. */
    async resume(claims: AccessTokenClaims, scheduleId: string, client: ClientSeen): Promise<ScheduleRow> {
      const now = ctx.clock.now();
      return ctx.store.transaction(async () => {
        const row = await scheduleOf(claims.sub, scheduleId, true);
        // One pinned to a removed node has nowhere to run: it is never rerouted.
        if (row.node_id !== null) await checkNode(claims.sub, row.node_id);
        const next = {
          ...row,
          paused: 0,
          pause_reason: null,
          consecutive_failures: 0,
          recheck_at: null,
          next_fire_at: firstFire(row, now),
          authorized_jti: claims.jti ?? null,
          updated_at: now,
        };
        await rows.schedules.update(scheduleId, next);
        if (row.paused === 1) await recordScheduleEvent(ctx.store, now, 'schedule.resumed', stateOf(next));
        await ctx.audit.record(claims.sub, 'schedule_changed', client, {
          schedule_id: scheduleId,
          change: 'resumed',
          ...auditedCredential(claims),
        });
        return next;
      });
    },

    async remove(claims: AccessTokenClaims, scheduleId: string, client: ClientSeen): Promise<void> {
      await ctx.store.transaction(async () => {
        await scheduleOf(claims.sub, scheduleId, true);
        await rows.schedules.remove(scheduleId);
        await ctx.audit.record(claims.sub, 'schedule_changed', client, {
          schedule_id: scheduleId,
          change: 'removed',
          ...auditedCredential(claims),
        });
      });
    },
  };
}

export type ScheduleChanges = ReturnType<typeof createScheduleChanges>;

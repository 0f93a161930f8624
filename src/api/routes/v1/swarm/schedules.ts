// The user's schedules (docs/api.md "Schedules"), with the JWT only: a node credential does node work, a deploy token
// enrols a node. Making, resuming and changing one need a recent sign-in (changing only to lower its cap does not:
// the change decides, schedules/schedule-changes.ts); pausing and removing one never do. Another user's schedule is
// the same 404 as none.
import type { FastifyPluginAsync } from 'fastify';
import {
  BackfillRequest,
  BackfillResponse,
  ScheduleChange,
  ScheduleDetail,
  ScheduleParams,
  ScheduleRemoved,
  ScheduleRequest,
  Schedule,
  SchedulesResponse,
} from '../../../../contract/schedules.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createScheduleChanges } from '../../../schedules/schedule-changes.js';
import { createBackfill } from '../../../schedules/backfill.js';
import { costOf, fireTimesAfter, tzVersion } from '../../../schedules/fire-times.js';
import { scheduleView, timingOf, type ScheduleRow } from '../../../schedules/schedule-store.js';
import { isoTime } from '../../../../lib/clock.js';

const SHOWN = 5;

export function scheduleRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const changes = createScheduleChanges(ctx);
    const { rows } = changes;
    const backfill = createBackfill(ctx);
    const detailOf = async (row: ScheduleRow): Promise<ScheduleDetail> => {
      // An occurrence overdue is the next round's to fire or to count missed: what is shown starts from now.
      const now = ctx.clock.now();
      const from = row.next_fire_at === null ? now : Math.max(row.next_fire_at - 1, now);
      const price = await changes.prices.agentFor(row.user_id, row.agent_id).then(
        (agent) => agent.price_cents,
        () => 0,
      );
      return {
        ...scheduleView(row),
        next_fire_times: fireTimesAfter(timingOf(row), from, SHOWN).map(isoTime),
        tz_version: tzVersion(),
        price_cents: price,
        cost: costOf(timingOf(row), now, price, row.daily_cap_cents),
        skips: await rows.skips.latest(row.schedule_id, 20),
        occurrences: (await rows.occurrences.latest(row.schedule_id, 20)).map((o) => ({
          fire_at: isoTime(o.fire_at),
          run_id: o.run_id,
          state: o.state,
        })),
      };
    };

    app.post<{ Body: ScheduleRequest }>(
      '/v1/swarm/schedules',
      { config: { auth: 'access-token', stepUp: true }, schema: { body: ScheduleRequest, response: { 201: ScheduleDetail } } },
      async (request, reply) =>
        reply.status(201).send(await detailOf(await changes.create(userOf(request), request.body, clientSeen(request)))),
    );

    app.get(
      '/v1/swarm/schedules',
      { config: { auth: 'access-token' }, schema: { response: { 200: SchedulesResponse } } },
      async (request) => ({
        schedules: (await rows.schedules.list(userOf(request).sub)).map(scheduleView),
      }),
    );

    app.get<{ Params: ScheduleParams }>(
      '/v1/swarm/schedules/:schedule_id',
      { config: { auth: 'access-token' }, schema: { params: ScheduleParams, response: { 200: ScheduleDetail } } },
      async (request) => detailOf(await changes.scheduleOf(userOf(request).sub, request.params.schedule_id)),
    );

    app.patch<{ Params: ScheduleParams; Body: ScheduleChange }>(
      '/v1/swarm/schedules/:schedule_id',
      { config: { auth: 'access-token' }, schema: { params: ScheduleParams, body: ScheduleChange, response: { 200: ScheduleDetail } } },
      async (request) => detailOf(await changes.change(userOf(request), request.params.schedule_id, request.body, clientSeen(request))),
    );

    app.post<{ Params: ScheduleParams }>(
      '/v1/swarm/schedules/:schedule_id/pause',
      { config: { auth: 'access-token' }, schema: { params: ScheduleParams, response: { 200: Schedule } } },
      async (request) => scheduleView(await changes.pause(userOf(request), request.params.schedule_id, clientSeen(request))),
    );

    app.post<{ Params: ScheduleParams }>(
      '/v1/swarm/schedules/:schedule_id/resume',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: ScheduleParams, response: { 200: Schedule } } },
      async (request) => scheduleView(await changes.resume(userOf(request), request.params.schedule_id, clientSeen(request))),
    );

    app.post<{ Params: ScheduleParams; Body: BackfillRequest }>(
      '/v1/swarm/schedules/:schedule_id/backfill',
      {
        config: { auth: 'access-token', stepUp: true },
        schema: { params: ScheduleParams, body: BackfillRequest, response: { 200: BackfillResponse } },
      },
      async (request) => backfill(userOf(request), request.params.schedule_id, request.body, clientSeen(request)),
    );

    app.delete<{ Params: ScheduleParams }>(
      '/v1/swarm/schedules/:schedule_id',
      { config: { auth: 'access-token' }, schema: { params: ScheduleParams, response: { 200: ScheduleRemoved } } },
      async (request) => {
        await changes.remove(userOf(request), request.params.schedule_id, clientSeen(request));
        return { schedule_id: request.params.schedule_id, removed: true as const };
      },
    );
  };
}

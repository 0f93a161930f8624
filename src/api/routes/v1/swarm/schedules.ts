// The user's schedules (docs/api.md "Schedules"), with the JWT only: a node credential does node work (its one part
// in schedules is the one-time move of its daemon's own, pinned to itself), a deploy token enrols a node. Making, resuming and changing one need a recent sign-in (changing only to lower its cap does not:
// the change decides, schedules/schedule-changes.ts); pausing and removing one never do. Another user's schedule is
// the same 404 as none.
import type { FastifyPluginAsync } from 'fastify';
import {
  BackfillRequest,
  BackfillResponse,
  ScheduleChange,
  ScheduleDetail,
  ScheduleMigrationRequest,
  ScheduleMigrationResponse,
  ScheduleParams,
  ScheduleRemoved,
  ScheduleRequest,
  Schedule,
  SchedulesResponse,
} from '../../../../contract/schedules.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createScheduleChanges } from '../../../schedules/schedule-changes.js';
import { createBackfill } from '../../../schedules/backfill.js';
import { createScheduleMigration } from '../../../schedules/schedule-migration.js';
import { scheduleView } from '../../../schedules/schedule-store.js';
import { createScheduleDetail } from '../../../schedules/schedule-detail.js';

export function scheduleRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const changes = createScheduleChanges(ctx);
    const { rows } = changes;
    const backfill = createBackfill(ctx);
    const detailOf = createScheduleDetail(ctx, changes);
    const migrate = createScheduleMigration(ctx);

    // A node's one-time move of its daemon's schedules, with its own credential: all a node may make of schedules.
    app.post<{ Body: ScheduleMigrationRequest }>(
      '/v1/swarm/nodes/self/schedules',
      { config: { auth: 'node' }, schema: { body: ScheduleMigrationRequest, response: { 200: ScheduleMigrationResponse } } },
      async (request) => migrate(nodeOf(request)!, request.body, clientSeen(request)),
    );

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

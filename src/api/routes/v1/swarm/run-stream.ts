// docs/api.md "Run events": POST /v1/swarm/runs/{run_id}/events takes the holding node's batches of the run's
// structured events; GET answers the run's user with them as Server-Sent Events until the run ends, resumable with
// Last-Event-ID or ?after (run-stream/follow-events.ts).
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../../../contract/errors.js';
import { MAX_RUN_EVENT_BATCH_BYTES, RunEventBatch, RunEventBatchResponse } from '../../../../contract/run-events.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { sendEventStream } from '../../../http/event-stream.js';
import { followFrom } from '../../../run-logs/follow-logs.js';
import { acceptEventBatch } from '../../../run-stream/accept-events.js';
import { createEventStore } from '../../../run-stream/event-store.js';
import { followEvents } from '../../../run-stream/follow-events.js';
import { createRunStore } from '../../../runs/run-store.js';

const RunParams = Type.Object({ run_id: Type.String({ maxLength: 64 }) });
const EventsQuery = Type.Object({ after: Type.Optional(Type.String({ pattern: '^(-1|[0-9]{1,10})$' })) }, { additionalProperties: false });

export function runStreamRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const deps = { runs: createRunStore(ctx.store), events: createEventStore(ctx.store) };

    app.post<{ Params: Static<typeof RunParams>; Body: RunEventBatch }>(
      '/v1/swarm/runs/:run_id/events',
      {
        bodyLimit: MAX_RUN_EVENT_BATCH_BYTES + 16 * 1024,
        // The last events come just before the run's result, which a stopping service still takes in. An event's
        // data is the agent's JSON, kept as JSON text, which escapes U+0000.
        config: { auth: 'node', completesInFlightWork: true, nulAllowedIn: ['/events/*/data'] },
        schema: { params: RunParams, body: RunEventBatch, response: { 200: RunEventBatchResponse } },
      },
      async (request) => acceptEventBatch(ctx, deps, nodeOf(request)!, request.params.run_id, request.body),
    );

    app.get<{ Params: Static<typeof RunParams>; Querystring: Static<typeof EventsQuery> }>(
      '/v1/swarm/runs/:run_id/events',
      { config: { auth: 'access-token' }, schema: { params: RunParams, querystring: EventsQuery } },
      async (request, reply) => {
        const { run_id: runId } = request.params;
        const run = await deps.runs.get(runId);
        // Another user's run and no run at all answer alike: a run id tells a stranger nothing.
        if (run === undefined || run.user_id !== userIdOf(request)) throw new SvcError('run_not_found', `no run ${runId} of yours`);
        const after = followFrom(request.query.after, request.headers['last-event-id']);
        return sendEventStream(reply, (gone) => followEvents(ctx, deps, runId, after, gone));
      },
    );
  };
}

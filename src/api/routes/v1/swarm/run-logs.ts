// docs/api.md "Run logs": POST /v1/swarm/runs/{run_id}/logs takes the holding node's batches of the run's log; GET
// answers the run's user with its entries, a page at a time, or with ?follow=1 as Server-Sent Events until the run
// ends (run-logs/follow-logs.ts).
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../../../contract/errors.js';
import { LogBatch, LogBatchResponse, RunLogs } from '../../../../contract/jobs.js';
import { PageLimit } from '../../../../contract/page-limit.js';
import { MAX_LOG_BATCH_BYTES, RUN_DATA_RETENTION_DAYS } from '../../../../contract/run-log-limits.js';
import { DAY_MS, isoTime } from '../../../../lib/clock.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { sendEventStream } from '../../../http/event-stream.js';
import { acceptLogBatch } from '../../../run-logs/accept-logs.js';
import { followFrom, followLogs } from '../../../run-logs/follow-logs.js';
import { createLogStore } from '../../../run-logs/log-store.js';
import { createRunStore } from '../../../runs/run-store.js';
import { isFinished, runView } from '../../../runs/run-view.js';

const RunParams = Type.Object({ run_id: Type.String({ maxLength: 64 }) });
/** A page of a log at most. */
const MAX_PAGE = 1000;
// A query string is text (the service never coerces types).
const LogsQuery = Type.Object(
  {
    /** The entries after this seq (-1, the default: from the first). */
    after: Type.Optional(Type.String({ pattern: '^(-1|[0-9]{1,10})$' })),
    limit: PageLimit(MAX_PAGE, MAX_PAGE),
    follow: Type.Optional(Type.String({ pattern: '^(0|1|true|false)$' })),
  },
  { additionalProperties: false },
);

export function runLogRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const deps = { runs: createRunStore(ctx.store), logs: createLogStore(ctx.store) };

    app.post<{ Params: Static<typeof RunParams>; Body: LogBatch }>(
      '/v1/swarm/runs/:run_id/logs',
      {
        bodyLimit: MAX_LOG_BATCH_BYTES + 16 * 1024,
        // The end of a run's log comes just before its result, which a stopping service still takes in.
        // An agent's output may hold U+0000: the line keeps U+FFFD in its place (run-logs/accept-logs.ts).
        config: { auth: 'node', completesInFlightWork: true, nulAllowedIn: ['/entries/*/text'] },
        schema: { params: RunParams, body: LogBatch, response: { 200: LogBatchResponse } },
      },
      async (request) => acceptLogBatch(ctx, deps, nodeOf(request)!, request.params.run_id, request.body),
    );

    app.get<{ Params: Static<typeof RunParams>; Querystring: Static<typeof LogsQuery> }>(
      '/v1/swarm/runs/:run_id/logs',
      { config: { auth: 'access-token' }, schema: { params: RunParams, querystring: LogsQuery, response: { 200: RunLogs } } },
      async (request, reply) => {
        const { run_id: runId } = request.params;
        const run = await deps.runs.get(runId);
        // Another user's run and no run at all answer alike: a run id tells a stranger nothing.
        if (run === undefined || run.user_id !== userIdOf(request)) throw new SvcError('run_not_found', `no run ${runId} of yours`);
        const after = followFrom(request.query.after, request.headers['last-event-id']);
        if (request.query.follow === '1' || request.query.follow === 'true') {
          return sendEventStream(reply, (gone) => followLogs(ctx, deps, runId, after, gone));
        }
        const limit = Number(request.query.limit ?? MAX_PAGE);
        const { entries, truncated, expired } = await deps.logs.read(runId, after, limit);
        return {
          run_id: runId,
          entries,
          truncated,
          // Ended, and this page reaches the end of its log.
          finished: isFinished(run) && entries.length < limit,
          status: runView(run, 0).status,
          next_after: entries.at(-1)?.seq ?? after,
          expires_at: run.finished_at === null ? null : isoTime(run.finished_at + RUN_DATA_RETENTION_DAYS * DAY_MS),
          expired,
        } satisfies RunLogs;
      },
    );
  };
}

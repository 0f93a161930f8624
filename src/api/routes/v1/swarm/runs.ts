// docs/api.md "Runs on the node", additions: GET /v1/swarm/runs/{run_id} follows a run (a 202 from execute), for its
// user or one of the user's nodes, with `Prefer: wait=` or `?wait=` to hold until it finishes; POST
// /v1/swarm/runs/{run_id}/result is the holding node's report, accepted once.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../../../contract/errors.js';
import { MAX_RESULT_BODY_BYTES, ResultRequest } from '../../../../contract/node-protocol.js';
import { RunDetail, RunResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { preferredWaitMs } from '../../../http/prefer.js';
import { createRunHistory, runLinks } from '../../../runs/run-history.js';
import { runView } from '../../../runs/run-view.js';
import { drainedPin } from '../../../nodes/node-drain.js';
import { createRuns } from '../../../runs/runs.js';

const RunParams = Type.Object({ run_id: Type.String({ maxLength: 64 }) });
// A query string is text (the service never coerces types): whole seconds, at most the service's own bound.
const RunQuery = Type.Object({ wait: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$' })) }, { additionalProperties: false });

export function runRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const runs = createRuns(ctx);
    const history = createRunHistory(ctx.store);

    app.get<{ Params: Static<typeof RunParams>; Querystring: Static<typeof RunQuery> }>(
      '/v1/swarm/runs/:run_id',
      { config: { auth: 'access-token-or-node' }, schema: { params: RunParams, querystring: RunQuery, response: { 200: RunDetail } } },
      async (request) => {
        const { run_id: runId } = request.params;
        const owned = await runs.store.get(runId);
        // Another user's run and no run at all answer alike: a run id tells a stranger nothing. A node sees the runs it
        // was handed, not the rest of its user's (docs/api.md "Scopes").
        const node = nodeOf(request);
        if (owned === undefined || owned.user_id !== userIdOf(request) || (node !== undefined && owned.node_id !== node.node_id)) {
          throw new SvcError('run_not_found', `no run ${runId} of yours`);
        }
        const asked = request.query.wait === undefined ? request.headers.prefer : `wait=${request.query.wait}`;
        const waitMs = asked === undefined ? 0 : preferredWaitMs(asked, ctx.runTiming.executeWaitMs);
        const final = await ctx.runEvents.waitFor(
          { run: runId },
          async (wake) => wake.hint ?? runs.keys.finalAnswer(runId),
          waitMs,
          ctx.drainSignal,
        );
        const now = (await runs.store.get(runId))!;
        // A finished run is shown as its final answer was (the balance then), with its attempts and links.
        const shown = final !== undefined ? (JSON.parse(final) as RunResponse) : runView(now, await ctx.ledger.balance(now.user_id));
        const pin = await drainedPin(ctx.store, now);
        return {
          ...shown,
          attempts: await history.attempts(now),
          links: runLinks(runId),
          ...(pin === undefined ? {} : { waiting_for_node: pin }),
        };
      },
    );

    app.post<{ Params: Static<typeof RunParams>; Body: ResultRequest }>(
      '/v1/swarm/runs/:run_id/result',
      {
        // The agent's output is up to 1 MiB; and during a drain the results of runs in flight are still taken in.
        bodyLimit: MAX_RESULT_BODY_BYTES,
        // An agent's output may hold U+0000; stored as JSON, its escape keeps it (http/nul-input.ts).
        config: { auth: 'node', completesInFlightWork: true, nulAllowedIn: ['/output'] },
        schema: { params: RunParams, body: ResultRequest, response: { 200: RunResponse } },
      },
      async (request) => runs.dispatch.report(nodeOf(request)!, request.params.run_id, request.body),
    );
  };
}

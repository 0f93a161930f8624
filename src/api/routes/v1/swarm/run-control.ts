// Runs as jobs, their user's side (docs/api.md "Runs as jobs"): GET /v1/swarm/runs (the history), POST
// /v1/swarm/runs/{run_id}/cancel, and POST /v1/swarm/runs/by-key, which settles a request whose answer was lost by
// asking for its Idempotency-Key's run rather than sending it again.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../../../contract/errors.js';
import { KeySettlement, RunList, RunListQuery } from '../../../../contract/jobs.js';
import { RunResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, userIdOf } from '../../../http/auth.js';
import { acceptJsonBodiesOnly } from '../../../http/json-body.js';
import { createRunCanceller } from '../../../runs/cancel-run.js';
import { parseIdempotencyKey } from '../../../runs/idempotency.js';
import { createRunHistory } from '../../../runs/run-history.js';
import { runView } from '../../../runs/run-view.js';
import { createRuns } from '../../../runs/runs.js';

const RunParams = Type.Object({ run_id: Type.String({ maxLength: 64 }) });

export function runControlRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    // A cancel has no body; clients that send Content-Type: application/json with none are answered alike.
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const runs = createRuns(ctx);
    const history = createRunHistory(ctx.store);
    const cancel = createRunCanceller(ctx, runs.store, runs.finish);

    app.get<{ Querystring: RunListQuery }>(
      '/v1/swarm/runs',
      { config: { auth: 'access-token' }, schema: { querystring: RunListQuery, response: { 200: RunList } } },
      async (request) => history.list(userIdOf(request), request.query),
    );

    // 200 when the run ended cancelled (a queued one, or a repeat); 202 while its node stops it.
    app.post<{ Params: Static<typeof RunParams> }>(
      '/v1/swarm/runs/:run_id/cancel',
      { config: { auth: 'access-token' }, schema: { params: RunParams, response: { 200: RunResponse, 202: RunResponse } } },
      async (request, reply) => {
        const { run, stopping } = await cancel(userIdOf(request), request.params.run_id);
        return reply.code(stopping ? 202 : 200).send(run);
      },
    );

    // The key's run as it stands, or the key settled as never run: then an execute with it that is still on its way
    // is refused when it arrives (409 idempotency_key_void), so the answer stays true.
    app.post(
      '/v1/swarm/runs/by-key',
      { config: { auth: 'access-token-or-node' }, schema: { response: { 200: KeySettlement } } },
      async (request) => {
        const key = parseIdempotencyKey(request.headers['idempotency-key']);
        const userId = userIdOf(request);
        const node = nodeOf(request);
        const settled = await ctx.store.transaction(async () => {
          // The same lock execute takes for the key: a request with it in flight here either committed its run
          // before this looks, or finds the key settled after.
          await ctx.store.lock(`idempotency:${userId}:${key}`);
          return runs.keys.settle(userId, key, ctx.clock.now());
        });
        if (settled.kind === 'never_ran') return { idempotency_key: key, settled: 'never_ran', run: null };
        const row = (await runs.store.get(settled.run_id))!;
        // A node settles the runs it asked for or was handed, as it sees them (docs/api.md "Scopes").
        if (node !== undefined && row.node_id !== node.node_id && row.pinned_node_id !== node.node_id) {
          throw new SvcError('run_not_found', 'the run of this Idempotency-Key was not handed to this node');
        }
        return { idempotency_key: key, settled: 'found', run: runView(row, await ctx.ledger.balance(userId)) };
      },
    );
  };
}

// POST /v1/swarm/execute (spec §4; DECISIONS.md "Execute"): Bearer JWT whose sub is the body's user_id, and an
// Idempotency-Key header. The work is createExecuteAgent's; this file only reads the request and writes the reply.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { ExecuteRequest, ExecuteResponse } from '../../contract/schemas.js';
import { requireAccessToken } from '../bearer.js';
import type { ServiceContext } from '../context.js';
import { createExecuteAgent } from '../execute/execute-agent.js';
import { parseIdempotencyKey } from '../idempotency.js';

export function executeRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const executeAgent = createExecuteAgent(ctx);
    const callers = new WeakMap<FastifyRequest, AccessTokenClaims>();

    app.post<{ Body: ExecuteRequest }>(
      '/v1/swarm/execute',
      {
        schema: { body: ExecuteRequest, response: { 200: ExecuteResponse } },
        // The token is checked before the body is read: a caller without one learns nothing about the request.
        onRequest: async (request) => {
          callers.set(request, await requireAccessToken(ctx, request));
        },
      },
      async (request, reply) => {
        const result = await executeAgent(
          {
            subject: callers.get(request)!.sub,
            request: request.body,
            idempotencyKey: parseIdempotencyKey(request.headers['idempotency-key']),
          },
          request.log,
        );
        if (result.replayed) reply.header('idempotent-replayed', 'true');
        // The stored JSON is sent as it is, so a replay is byte for byte the first response.
        return reply.status(result.statusCode).type('application/json; charset=utf-8').send(result.json);
      },
    );
  };
}

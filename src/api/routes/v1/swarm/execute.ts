// POST /v1/swarm/execute (spec §4; DECISIONS.md "Execute"): Bearer JWT whose sub is the body's user_id, and an
// Idempotency-Key header. The work is createExecuteAgent's; this file only reads the request and writes the reply.
import type { FastifyPluginAsync } from 'fastify';
import { ExecuteRequest, ExecuteResponse } from '../../../../contract/schemas.js';
import { userOf } from '../../../http/auth.js';
import type { ServiceContext } from '../../../context.js';
import { createExecuteAgent } from '../../../execute/execute-agent.js';
import { parseIdempotencyKey } from '../../../execute/idempotency.js';

export function executeRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const executeAgent = createExecuteAgent(ctx);

    app.post<{ Body: ExecuteRequest }>(
      '/v1/swarm/execute',
      {
        // The token is checked before the body is read: a caller without one learns nothing about the request.
        config: { auth: 'access-token' },
        schema: { body: ExecuteRequest, response: { 200: ExecuteResponse } },
      },
      async (request, reply) => {
        const result = await executeAgent(
          {
            subject: userOf(request).sub,
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

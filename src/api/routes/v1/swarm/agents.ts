// DECISIONS.md addition: GET /v1/swarm/agents, the SKU catalog of spec §2. Public: prices are not secret.
import type { FastifyPluginAsync } from 'fastify';
import { AGENT_SKUS } from '../../../../contract/agents.js';
import { AgentsResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';

export function agentRoutes(_ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    app.get('/v1/swarm/agents', { schema: { response: { 200: AgentsResponse } } }, async () => AGENT_SKUS);
  };
}

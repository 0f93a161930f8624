// An addition (docs/api.md "Additions the flow needs"): GET /v1/swarm/agents, the SKU catalog of spec §2. Public:
// prices are not secret. A caller who brings a credential (the JWT, or a node's) also sees the agents of their own
// they can run, at their price (docs/api.md "Agents of one's own").
import type { FastifyPluginAsync } from 'fastify';
import { AgentsResponse } from '../../../../contract/schemas.js';
import { createAgentPrices } from '../../../agents/agent-prices.js';
import { createAgentVersions } from '../../../agents/agent-versions.js';
import type { ServiceContext } from '../../../context.js';
import { userIdOf } from '../../../http/auth.js';

export function agentRoutes(ctx: ServiceContext): FastifyPluginAsync {
  const prices = createAgentPrices(ctx.store, createAgentVersions(ctx.store), ctx.uploadLimits.ownAgentPriceCents);
  return async (app) => {
    app.get('/v1/swarm/agents', { config: { auth: 'optional' }, schema: { response: { 200: AgentsResponse } } }, async (request) =>
      prices.catalogFor(request.caller === undefined ? undefined : userIdOf(request)),
    );
  };
}

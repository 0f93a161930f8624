// GET /v1/swarm/usage (docs/api.md "Usage"): what the signed-in user's runs cost, by day, agent and node.
import type { FastifyPluginAsync } from 'fastify';
import { UsageQuery, UsageResponse } from '../../../../contract/usage.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { usageRangeOf, usageReport } from '../../../usage/usage-report.js';

export function usageRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: UsageQuery }>(
      '/v1/swarm/usage',
      { config: { auth: 'access-token' }, schema: { querystring: UsageQuery, response: { 200: UsageResponse } } },
      async (request) => usageReport(ctx.store, userOf(request).sub, usageRangeOf(request.query, ctx.clock.now())),
    );
  };
}

// What the service offers its operators on the API's own port, added to the app before any route
// (docs/api.md "Operations"): request ids on every answer, the request metrics' hooks, the OpenAPI document (which
// must see every route added after it) and the health checks. GET /metrics has its own listener (metrics-server.ts).
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.js';
import { healthRoutes } from './health-routes.js';
import { registerOpenApi } from './openapi.js';
import { echoRequestId } from './request-id.js';
import { observeRequests } from './request-metrics.js';

export async function addOperations(app: FastifyInstance, ctx: Pick<ServiceContext, 'metrics' | 'storeProbe' | 'urls'>): Promise<void> {
  echoRequestId(app);
  observeRequests(app, ctx.metrics);
  await registerOpenApi(app, ctx);
  await app.register(healthRoutes({ probe: ctx.storeProbe, metrics: ctx.metrics }));
}

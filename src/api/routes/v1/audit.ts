// GET /v1/audit (docs/api.md "Audit"): the signed-in user's own events, newest first, a page at a time.
import type { FastifyPluginAsync } from 'fastify';
import { AuditQuery, AuditResponse } from '../../../contract/auth.js';
import type { ServiceContext } from '../../context.js';
import { userOf } from '../../http/auth.js';

const DEFAULT_PAGE = 50;

export function auditRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: AuditQuery }>(
      '/v1/audit',
      { config: { auth: 'access-token' }, schema: { querystring: AuditQuery, response: { 200: AuditResponse } } },
      async (request) => {
        const limit = request.query.limit === undefined ? DEFAULT_PAGE : Number(request.query.limit);
        const events = await ctx.audit.list(userOf(request).sub, {
          limit,
          ...(request.query.before === undefined ? {} : { before: request.query.before }),
        });
        return { events, next_before: events.length === limit ? events[events.length - 1]!.event_id : null };
      },
    );
  };
}

// DECISIONS.md addition: POST /v1/swarm/nodes/enroll with the deploy token as the bearer credential. No body is
// needed; an empty one (with or without a JSON content type) or a JSON one is accepted and ignored.
import type { FastifyPluginAsync } from 'fastify';
import { EnrollResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';
import { parseBearer } from '../../../http/auth.js';
import { acceptJsonBodiesOnly } from '../../../http/json-body.js';
import { createNodeEnrollment, invalidDeployToken } from '../../../paygate/enroll.js';

export function nodeRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const enrollment = createNodeEnrollment(ctx.db, ctx.clock);

    app.post(
      '/v1/swarm/nodes/enroll',
      { config: { rateLimited: true }, schema: { response: { 200: EnrollResponse } } },
      async (request) => {
        const bearer = parseBearer(request.headers.authorization);
        if (bearer.kind === 'malformed') throw invalidDeployToken();
        return enrollment.enroll(bearer.kind === 'token' ? bearer.token : undefined);
      },
    );
  };
}

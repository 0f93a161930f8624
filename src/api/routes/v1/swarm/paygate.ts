// spec §4: POST /v1/swarm/paygate/session and /v1/swarm/paygate/activate (with the user's JWT: docs/api.md). Rate-limited per client address.
import type { FastifyPluginAsync } from 'fastify';
import { ActivateRequest, ActivateResponse, SessionRequest, SessionResponse } from '../../../../contract/schemas.js';
import type { ServiceContext } from '../../../context.js';
import { acceptJsonBodiesOnly } from '../../../http/json-body.js';
import { createPaygate } from '../../../paygate/sessions.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';

export function paygateRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    acceptJsonBodiesOnly(app);
    const paygate = createPaygate(ctx);

    app.post<{ Body: SessionRequest }>(
      '/v1/swarm/paygate/session',
      { config: { rateLimited: true }, schema: { body: SessionRequest, response: { 201: SessionResponse } } },
      async (request, reply) => reply.status(201).send(await paygate.createSession(request.body)),
    );

    app.post<{ Body: ActivateRequest }>(
      '/v1/swarm/paygate/activate',
      // spec §4's body plus the session user's JWT from a recent sign-in: a payment in someone's name activates
      // nothing for the one who paid it (docs/api.md "activate").
      {
        config: { rateLimited: true, auth: 'access-token', stepUp: true },
        schema: { body: ActivateRequest, response: { 200: ActivateResponse } },
      },
      async (request) => paygate.activateSession(request.body, userOf(request).sub, clientSeen(request)),
    );
  };
}

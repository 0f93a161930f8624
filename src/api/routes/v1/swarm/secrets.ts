// The user's secrets (docs/api.md "Secrets"): names and dates to read; set and removed with a recent sign-in (a JWT
// copied from a disk cannot plant or change what agents are handed), each change audited in its own transaction.
// Values never come back out of this API: only the node a run is handed to gets them (dispatch.ts).
import type { FastifyPluginAsync } from 'fastify';
import { SecretParams, SecretRemoved, SecretRequest, SecretsResponse, SecretWritten } from '../../../../contract/secrets.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createSecretChanges } from '../../../user-secrets/secret-changes.js';

export function secretRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const secrets = createSecretChanges(ctx);

    app.get('/v1/swarm/secrets', { config: { auth: 'access-token' }, schema: { response: { 200: SecretsResponse } } }, async (request) => ({
      secrets: await secrets.store.list(userOf(request).sub),
    }));

    app.put<{ Params: SecretParams; Body: SecretRequest }>(
      '/v1/swarm/secrets/:name',
      {
        config: { auth: 'access-token', stepUp: true },
        schema: { params: SecretParams, body: SecretRequest, response: { 200: SecretWritten } },
      },
      async (request) => {
        const written = await secrets.set(userOf(request).sub, request.params.name, request.body.value, clientSeen(request));
        return { ...written.secret, created: written.created };
      },
    );

    app.delete<{ Params: SecretParams }>(
      '/v1/swarm/secrets/:name',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: SecretParams, response: { 200: SecretRemoved } } },
      async (request) => {
        await secrets.remove(userOf(request).sub, request.params.name, clientSeen(request));
        return { name: request.params.name, removed: true as const };
      },
    );
  };
}

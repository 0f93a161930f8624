// The user's secrets (docs/api.md "Secrets"): names and dates to read; set and removed with a recent sign-in (a JWT
// copied from a disk cannot plant or change what agents are handed), each change audited in its own transaction.
// Values never come back out of this API: only the node a run is handed to gets them (dispatch.ts).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { SvcError } from '../../../../contract/errors.js';
import { SecretParams, SecretRemoved, SecretRequest, SecretsResponse, SecretWritten, secretNameProblem, secretValueProblem } from '../../../../contract/secrets.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createSecretStore } from '../../../user-secrets/secret-store.js';

export function secretRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const secrets = createSecretStore(ctx.store, ctx.vault, ctx.clock);
    const nameOf = (request: FastifyRequest<{ Params: SecretParams }>): string => {
      const problem = secretNameProblem(request.params.name);
      if (problem !== undefined) throw new SvcError('invalid_request', `the secret's name ${problem}`, { extensions: { errors: [{ path: '/params/name', message: problem }] } });
      return request.params.name;
    };

    app.get('/v1/swarm/secrets', { config: { auth: 'access-token' }, schema: { response: { 200: SecretsResponse } } }, async (request) => ({
      secrets: await secrets.list(userOf(request).sub),
    }));

    app.put<{ Params: SecretParams; Body: SecretRequest }>(
      '/v1/swarm/secrets/:name',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: SecretParams, body: SecretRequest, response: { 200: SecretWritten } } },
      async (request) => {
        const userId = userOf(request).sub;
        const name = nameOf(request);
        const problem = secretValueProblem(request.body.value);
        // The message names the rule, never the value.
        if (problem !== undefined) throw new SvcError('invalid_request', `the value ${problem}`, { extensions: { errors: [{ path: '/value', message: problem }] } });
        return ctx.store.transaction(async () => {
          const written = await secrets.put(userId, name, request.body.value);
          await ctx.audit.record(userId, 'secret_changed', clientSeen(request), { name, change: written.created ? 'created' : 'updated' });
          return { ...written.secret, created: written.created };
        });
      },
    );

    app.delete<{ Params: SecretParams }>(
      '/v1/swarm/secrets/:name',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: SecretParams, response: { 200: SecretRemoved } } },
      async (request) => {
        const userId = userOf(request).sub;
        const name = request.params.name;
        return ctx.store.transaction(async () => {
          if (secretNameProblem(name) !== undefined || !(await secrets.remove(userId, name))) {
            throw new SvcError('not_found', `you have no secret ${JSON.stringify(name.slice(0, 64))}`, { remedy: 'swarm-node secret list shows the names of yours.' });
          }
          await ctx.audit.record(userId, 'secret_changed', clientSeen(request), { name, change: 'removed' });
          return { name, removed: true as const };
        });
      },
    );
  };
}

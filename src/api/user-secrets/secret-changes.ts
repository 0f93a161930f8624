// Setting and removing a user's secrets (docs/api.md "Secrets"), as PUT and DELETE /v1/swarm/secrets/{name} and the
// console's secrets form do it: the name and value checked (a message names the rule, never the value), the change
// and its audit in one transaction. Both callers require a recent sign-in before they get here (Step-up).
import { SvcError } from '../../contract/errors.js';
import { secretNameProblem, secretValueProblem, type SecretSummary } from '../../contract/secrets.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import { createSecretStore, userSecretsLock, type SecretStore } from './secret-store.js';

export interface SecretChanges {
  readonly store: SecretStore;
  set(userId: string, name: string, value: string, client: ClientSeen): Promise<{ created: boolean; secret: SecretSummary }>;
  /** 404 for a name the user has not (or that no secret could have). */
  remove(userId: string, name: string, client: ClientSeen): Promise<void>;
}

export function createSecretChanges(ctx: ServiceContext): SecretChanges {
  const secrets = createSecretStore(ctx.store, ctx.vault, ctx.clock);
  return {
    store: secrets,

    set(userId, name, value, client) {
      const nameProblem = secretNameProblem(name);
      if (nameProblem !== undefined)
        throw new SvcError('invalid_request', `the secret's name ${nameProblem}`, {
          extensions: { errors: [{ path: '/params/name', message: nameProblem }] },
        });
      const valueProblem = secretValueProblem(value);
      if (valueProblem !== undefined)
        throw new SvcError('invalid_request', `the value ${valueProblem}`, {
          extensions: { errors: [{ path: '/value', message: valueProblem }] },
        });
      // The count of the user's secrets is checked under this lock (secret-store.ts), taken before the transaction.
      return ctx.store.lockedTransaction([userSecretsLock(userId)], async () => {
        const written = await secrets.put(userId, name, value);
        await ctx.audit.record(userId, 'secret_changed', client, { name, change: written.created ? 'created' : 'updated' });
        return written;
      });
    },

    remove(userId, name, client) {
      return ctx.store.transaction(async () => {
        if (secretNameProblem(name) !== undefined || !(await secrets.remove(userId, name))) {
          throw new SvcError('not_found', `you have no secret ${JSON.stringify(name.slice(0, 64))}`, {
            remedy: 'The names of yours: swarm-node secret list.',
          });
        }
        await ctx.audit.record(userId, 'secret_changed', client, { name, change: 'removed' });
      });
    },
  };
}

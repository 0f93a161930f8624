// Adding and removing a user's webhook endpoints (docs/api.md "Webhooks"), as POST and DELETE /v1/swarm/webhooks and
// the console's webhooks form do it: the URL checked (https, a public address unless the operator allows private
// ones), the change and its audit in one transaction. Another user's endpoint is the same 404 as none.
import { SvcError } from '../../contract/errors.js';
import type { WebhookEndpoint, WebhookEvent } from '../../contract/webhooks.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import { createEndpointStore, webhookEndpointsLock, type EndpointRow, type EndpointStore } from './endpoint-store.js';
import { checkEndpointUrl } from './endpoint-url.js';

export interface NewEndpoint {
  url: string;
  /** Absent: every event. */
  events?: readonly WebhookEvent[];
  description?: string;
}

export interface EndpointChanges {
  readonly store: EndpointStore;
  /** The user's endpoint, or 404. */
  endpointOf(userId: string, endpointId: string): Promise<EndpointRow>;
  add(userId: string, given: NewEndpoint, client: ClientSeen): Promise<{ endpoint: WebhookEndpoint; signing_secret: string }>;
  remove(userId: string, endpointId: string, client: ClientSeen): Promise<void>;
}

export function createEndpointChanges(ctx: ServiceContext): EndpointChanges {
  const endpoints = createEndpointStore(ctx.store, ctx.vault, ctx.clock);
  const endpointOf = async (userId: string, endpointId: string): Promise<EndpointRow> => {
    const row = await endpoints.find(userId, endpointId);
    if (row === undefined)
      throw new SvcError('not_found', `you have no webhook endpoint ${JSON.stringify(endpointId)}`, {
        remedy: 'Yours: swarm-node webhook list.',
      });
    return row;
  };
  return {
    store: endpoints,
    endpointOf,

    add(userId, given, client) {
      const url = checkEndpointUrl(given.url, ctx.webhookDelivery.allowPrivate);
      // The count of the user's endpoints is checked under this lock (endpoint-store.ts), taken before the transaction.
      return ctx.store.lockedTransaction([webhookEndpointsLock(userId)], async () => {
        const made = await endpoints.create(userId, {
          url,
          ...(given.events === undefined ? {} : { events: given.events }),
          ...(given.description === undefined ? {} : { description: given.description }),
        });
        await ctx.audit.record(userId, 'webhook_changed', client, {
          endpoint_id: made.endpoint.endpoint_id,
          change: 'added',
          url,
          events: made.endpoint.events,
        });
        return made;
      });
    },

    remove(userId, endpointId, client) {
      return ctx.store.transaction(async () => {
        const row = await endpointOf(userId, endpointId);
        await endpoints.remove(userId, endpointId);
        await ctx.audit.record(userId, 'webhook_changed', client, { endpoint_id: endpointId, change: 'removed', url: row.url });
      });
    },
  };
}

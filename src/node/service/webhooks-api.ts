// The user's webhook endpoints and their deliveries (docs/api.md "Webhooks"). Adding, removing and rotating need a
// recent sign-in (the caller wraps them in withRecentSignIn); none of those is retried, since each makes a secret or
// an endpoint of its own.
import type {
  DeliveriesResponse,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookEvent,
  WebhooksResponse,
} from '../../contract/webhooks.js';
import type { ServiceClient } from './service-client.js';

const base = '/v1/swarm/webhooks';
const endpointPath = (endpointId: string): string => `${base}/${encodeURIComponent(endpointId)}`;

export async function addWebhook(
  client: ServiceClient,
  token: string,
  given: { url: string; events?: WebhookEvent[]; description?: string },
): Promise<WebhookCreated> {
  return (await client.call<WebhookCreated>({ method: 'POST', path: base, body: given, bearer: token, retrySafe: false })).body;
}

export async function listWebhooks(client: ServiceClient, token: string): Promise<WebhooksResponse> {
  return (await client.call<WebhooksResponse>({ method: 'GET', path: base, bearer: token, retrySafe: true })).body;
}

export async function removeWebhook(client: ServiceClient, token: string, endpointId: string): Promise<void> {
  await client.call({ method: 'DELETE', path: endpointPath(endpointId), bearer: token, retrySafe: false });
}

export async function rotateWebhookSecret(
  client: ServiceClient,
  token: string,
  endpointId: string,
  previousSeconds: number | undefined,
): Promise<WebhookCreated> {
  const body = previousSeconds === undefined ? {} : { previous_secret_seconds: previousSeconds };
  return (
    await client.call<WebhookCreated>({
      method: 'POST',
      path: `${endpointPath(endpointId)}/rotate-secret`,
      body,
      bearer: token,
      retrySafe: false,
    })
  ).body;
}

export async function webhookDeliveries(
  client: ServiceClient,
  token: string,
  endpointId: string,
  query: { limit?: number; before?: string },
): Promise<DeliveriesResponse> {
  const search = new URLSearchParams();
  if (query.limit !== undefined) search.set('limit', String(query.limit));
  if (query.before !== undefined) search.set('before', query.before);
  const suffix = search.size === 0 ? '' : `?${search.toString()}`;
  return (
    await client.call<DeliveriesResponse>({
      method: 'GET',
      path: `${endpointPath(endpointId)}/deliveries${suffix}`,
      bearer: token,
      retrySafe: true,
    })
  ).body;
}

export async function webhookDelivery(
  client: ServiceClient,
  token: string,
  endpointId: string,
  eventId: string,
): Promise<WebhookDeliveryDetail> {
  const path = `${endpointPath(endpointId)}/deliveries/${encodeURIComponent(eventId)}`;
  return (await client.call<WebhookDeliveryDetail>({ method: 'GET', path, bearer: token, retrySafe: true })).body;
}

export async function resendWebhook(client: ServiceClient, token: string, endpointId: string, eventId: string): Promise<WebhookDelivery> {
  const path = `${endpointPath(endpointId)}/deliveries/${encodeURIComponent(eventId)}/resend`;
  return (await client.call<WebhookDelivery>({ method: 'POST', path, bearer: token, retrySafe: true })).body;
}

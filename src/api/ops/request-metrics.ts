// Feeds the HTTP side of the metrics (metrics.ts): every answered request by route pattern, the payment webhook's
// deliveries by outcome, and the database errors a request met. Hooks on the root, so they see every route.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WEBHOOK_PATH } from '../payments/sandbox-delivery.js';
import { isDatabaseError, type ServiceMetrics, type WebhookOutcome } from './metrics.js';

/** The label of a request no route matched (a 404): one series, whatever the URL was. */
export const UNMATCHED_ROUTE = 'unmatched';

export function observeRequests(app: FastifyInstance, metrics: ServiceMetrics): void {
  app.addHook('onResponse', async (request, reply) => {
    metrics.request(request.method, routeOf(request), reply.statusCode, reply.elapsedTime / 1000);
  });
  app.addHook('onError', async (_request, _reply, error) => {
    if (isDatabaseError(error)) metrics.databaseError('request');
  });
  // The webhook's answer says what became of the event (webhook-receiver.ts); its status says why it was refused.
  app.addHook('onSend', async (request, reply, payload) => {
    if (routeOf(request) === WEBHOOK_PATH) metrics.webhookDelivery(webhookOutcomeOf(reply.statusCode, payload));
    return payload;
  });
}

function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? UNMATCHED_ROUTE;
}

function webhookOutcomeOf(status: number, payload: unknown): WebhookOutcome {
  if (status >= 500) return 'failed';
  if (status === 401) return 'bad_signature';
  if (status !== 200) return 'invalid';
  let ack: { duplicate?: unknown; ignored?: unknown } = {};
  try {
    if (typeof payload === 'string') ack = JSON.parse(payload) as typeof ack;
  } catch {
    // Not the receiver's acknowledgement; counted as applied, the answer it got.
  }
  if (ack.duplicate === true) return 'duplicate';
  if (ack.ignored === true) return 'ignored';
  return 'applied';
}

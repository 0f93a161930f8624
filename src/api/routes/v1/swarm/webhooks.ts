// The user's webhook endpoints and their deliveries (docs/api.md "Webhooks"). Adding, removing and rotating the
// signing secret need a recent sign-in and are audited; reading and re-sending need the JWT. Another user's endpoint
// or delivery is the same 404 as none.
import type { FastifyPluginAsync } from 'fastify';
import { SvcError } from '../../../../contract/errors.js';
import {
  DEFAULT_PREVIOUS_SECRET_SECONDS,
  DeliveriesQuery,
  DeliveriesResponse,
  DeliveryParams,
  RotateRequest,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryDetail,
  WebhookEndpoint,
  WebhookParams,
  WebhookRemoved,
  WebhookRequest,
  WebhooksResponse,
} from '../../../../contract/webhooks.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createDeliveryStore } from '../../../webhooks/delivery-store.js';
import { createEndpointChanges } from '../../../webhooks/endpoint-changes.js';

const DEFAULT_PAGE = 20;

export function webhookRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const changes = createEndpointChanges(ctx);
    const endpoints = changes.store;
    const endpointOf = changes.endpointOf;
    const deliveries = createDeliveryStore(ctx.store);
    const noDelivery = (endpointId: string, eventId: string) =>
      new SvcError('not_found', `this endpoint has no delivery of event ${JSON.stringify(eventId)}`, {
        remedy: `Its deliveries: swarm-node webhook deliveries ${endpointId}.`,
      });

    app.post<{ Body: WebhookRequest }>(
      '/v1/swarm/webhooks',
      { config: { auth: 'access-token', stepUp: true }, schema: { body: WebhookRequest, response: { 201: WebhookCreated } } },
      async (request, reply) => {
        const created = await changes.add(userOf(request).sub, request.body, clientSeen(request));
        return reply.status(201).send({ ...created.endpoint, signing_secret: created.signing_secret });
      },
    );

    app.get(
      '/v1/swarm/webhooks',
      { config: { auth: 'access-token' }, schema: { response: { 200: WebhooksResponse } } },
      async (request) => ({
        webhooks: await endpoints.list(userOf(request).sub),
      }),
    );

    app.get<{ Params: WebhookParams }>(
      '/v1/swarm/webhooks/:endpoint_id',
      { config: { auth: 'access-token' }, schema: { params: WebhookParams, response: { 200: WebhookEndpoint } } },
      async (request) => endpoints.viewOf(await endpointOf(userOf(request).sub, request.params.endpoint_id), ctx.clock.now()),
    );

    app.delete<{ Params: WebhookParams }>(
      '/v1/swarm/webhooks/:endpoint_id',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: WebhookParams, response: { 200: WebhookRemoved } } },
      async (request) => {
        await changes.remove(userOf(request).sub, request.params.endpoint_id, clientSeen(request));
        return { endpoint_id: request.params.endpoint_id, removed: true as const };
      },
    );

    app.post<{ Params: WebhookParams; Body: RotateRequest | undefined }>(
      '/v1/swarm/webhooks/:endpoint_id/rotate-secret',
      {
        config: { auth: 'access-token', stepUp: true },
        schema: { params: WebhookParams, body: RotateRequest, response: { 200: WebhookCreated } },
      },
      async (request) => {
        const userId = userOf(request).sub;
        const endpointId = request.params.endpoint_id;
        const previousSeconds = request.body?.previous_secret_seconds ?? DEFAULT_PREVIOUS_SECRET_SECONDS;
        const rotated = await ctx.store.transaction(async () => {
          const done = await endpoints.rotate(userId, endpointId, previousSeconds);
          if (done === undefined) await endpointOf(userId, endpointId);
          await ctx.audit.record(userId, 'webhook_changed', clientSeen(request), {
            endpoint_id: endpointId,
            change: 'secret_rotated',
            previous_secret_seconds: previousSeconds,
          });
          return done!;
        });
        return { ...rotated.endpoint, signing_secret: rotated.signing_secret };
      },
    );

    app.get<{ Params: WebhookParams; Querystring: DeliveriesQuery }>(
      '/v1/swarm/webhooks/:endpoint_id/deliveries',
      {
        config: { auth: 'access-token' },
        schema: { params: WebhookParams, querystring: DeliveriesQuery, response: { 200: DeliveriesResponse } },
      },
      async (request) => {
        await endpointOf(userOf(request).sub, request.params.endpoint_id);
        const limit = request.query.limit === undefined ? DEFAULT_PAGE : Number(request.query.limit);
        const page = await deliveries.list(request.params.endpoint_id, {
          limit,
          ...(request.query.before === undefined ? {} : { before: request.query.before }),
        });
        return { deliveries: page, next_before: page.length === limit ? page[page.length - 1]!.event_id : null };
      },
    );

    app.get<{ Params: DeliveryParams }>(
      '/v1/swarm/webhooks/:endpoint_id/deliveries/:event_id',
      { config: { auth: 'access-token' }, schema: { params: DeliveryParams, response: { 200: WebhookDeliveryDetail } } },
      async (request) => {
        await endpointOf(userOf(request).sub, request.params.endpoint_id);
        const found = await deliveries.find(request.params.endpoint_id, request.params.event_id);
        if (found === undefined) throw noDelivery(request.params.endpoint_id, request.params.event_id);
        return { ...found.delivery, payload: found.payload, attempt_log: found.attempts };
      },
    );

    // A re-send changes no configuration: the JWT that reads the deliveries may send one again, so many a minute.
    app.post<{ Params: DeliveryParams }>(
      '/v1/swarm/webhooks/:endpoint_id/deliveries/:event_id/resend',
      { config: { auth: 'access-token' }, schema: { params: DeliveryParams, response: { 202: WebhookDelivery } } },
      async (request, reply) => {
        await endpointOf(userOf(request).sub, request.params.endpoint_id);
        ctx.webhookResends.take(request.params.endpoint_id, reply);
        if (!(await deliveries.resend(request.params.endpoint_id, request.params.event_id, ctx.clock.now())))
          throw noDelivery(request.params.endpoint_id, request.params.event_id);
        const found = await deliveries.find(request.params.endpoint_id, request.params.event_id);
        return reply.status(202).send(found!.delivery);
      },
    );
  };
}

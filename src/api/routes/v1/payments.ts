// DECISIONS.md addition: POST /v1/payments/webhook, the payment provider's confirmation (spec §6.1).
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { WebhookEvent } from '../../../contract/schemas.js';
import type { ServiceContext } from '../../context.js';
import { acceptJsonBodiesOnly } from '../../http/json-body.js';
import { createPaymentRecords } from '../../payments/payment-records.js';
import { createWebhookReceiver } from '../../payments/webhook-receiver.js';
import { WEBHOOK_SIGNATURE_HEADER, verifyWebhookSignature } from '../../payments/webhook-signature.js';

const WebhookAck = Type.Object({
  received: Type.Literal(true),
  duplicate: Type.Optional(Type.Boolean()),
  ignored: Type.Optional(Type.Boolean()),
  payment_id: Type.Optional(Type.String()),
});

export function paymentWebhookRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    acceptJsonBodiesOnly(app);
    const payments = createPaymentRecords(ctx);
    const receiver = createWebhookReceiver({ store: ctx.store, clock: ctx.clock, payments });

    app.post<{ Body: WebhookEvent }>(
      '/v1/payments/webhook',
      {
        schema: { body: WebhookEvent, response: { 200: WebhookAck } },
        // The signature is checked before the body's shape, so an unsigned sender learns nothing about it.
        preValidation: async (request) => {
          verifyWebhookSignature(
            ctx.secrets.webhookSecret,
            request.headers[WEBHOOK_SIGNATURE_HEADER],
            request.rawBody ?? Buffer.alloc(0),
            ctx.clock.now(),
          );
        },
      },
      async (request) => receiver.apply(request.body),
    );
  };
}

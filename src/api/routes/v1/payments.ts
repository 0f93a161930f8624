// An addition (docs/api.md "The payment webhook"): POST /v1/payments/webhook, the payment provider's confirmation
// (spec §6.1). The service's own Svc-Signature scheme is always taken; a provider with its own (Stripe) is taken
// beside it, told apart by the header its deliveries are signed in.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { SvcError } from '../../../contract/errors.js';
import { WebhookEvent } from '../../../contract/schemas.js';
import type { ProviderEvent, ServiceContext } from '../../context.js';
import { acceptJsonBodiesOnly } from '../../http/json-body.js';
import { createPaymentRecords } from '../../payments/payment-records.js';
import { STRIPE_SIGNATURE_HEADER } from '../../payments/stripe-webhook.js';
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
    const providerWebhook = ctx.provider.webhook;
    /** The provider's events whose signature was verified, from preValidation to the handler. */
    const verified = new WeakMap<FastifyRequest, ProviderEvent>();

    app.post<{ Body: WebhookEvent }>(
      '/v1/payments/webhook',
      {
        schema: { body: WebhookEvent, response: { 200: WebhookAck } },
        // The signature is checked before the body's shape, so an unsigned sender learns nothing about it.
        preValidation: async (request) => {
          const rawBody = request.rawBody ?? Buffer.alloc(0);
          const providerSignature = providerWebhook && request.headers[providerWebhook.signatureHeader];
          if (providerWebhook !== undefined && providerSignature !== undefined) {
            verified.set(request, providerWebhook.verify(rawBody, providerSignature, ctx.clock.now()));
            return;
          }
          if (request.headers[STRIPE_SIGNATURE_HEADER] !== undefined && request.headers[WEBHOOK_SIGNATURE_HEADER] === undefined) {
            throw new SvcError('unauthorized', 'a Stripe-Signature delivery, but this service does not take Stripe payments', {
              remedy: 'Start svc-api with SVC_PAYMENT_PROVIDER=stripe and the Stripe secrets (docs/operations.md "Payments with Stripe").',
            });
          }
          verifyWebhookSignature(ctx.secrets.webhookSecret, request.headers[WEBHOOK_SIGNATURE_HEADER], rawBody, ctx.clock.now());
        },
      },
      async (request) => {
        const event = verified.get(request);
        if (event === undefined || providerWebhook === undefined) return receiver.apply(request.body);
        return receiver.applyProviderEvent(event, await providerWebhook.paymentOf(event));
      },
    );
  };
}

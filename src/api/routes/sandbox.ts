// The sandbox payment provider (svc-api --sandbox; docs/decisions/0007-payment-provider.md): checkout,
// confirmation and the signed webhook, so the whole paid funnel runs locally against real HTTP.
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { SvcError } from '../../contract/errors.js';
import { ID_PATTERN, SandboxPayment, SandboxPaymentRequest, normalizeEmail } from '../../contract/schemas.js';
import { PageLimit } from '../../contract/page-limit.js';
import { TIERS } from '../../contract/tiers.js';
import type { ServiceContext } from '../context.js';
import { acceptJsonBodiesOnly } from '../http/json-body.js';
import { createSandboxBooks, toSandboxPayment, type SandboxPaymentRow } from '../payments/sandbox-books.js';
import { createWebhookDeliveries } from '../payments/sandbox-delivery.js';
import { createSandboxOutbox } from '../mail/sandbox-outbox.js';
import { EMAIL_PATTERN } from '../../contract/schemas.js';
import { isoTime } from '../../lib/clock.js';

const PaymentParams = Type.Object({ id: Type.String({ pattern: ID_PATTERN }) });
const MailQuery = Type.Object(
  { to: Type.String({ pattern: EMAIL_PATTERN, maxLength: 254 }), limit: PageLimit(50, 10) },
  { additionalProperties: false },
);
const MailResponse = Type.Object({
  messages: Type.Array(Type.Object({ to: Type.String(), subject: Type.String(), text: Type.String(), sent_at: Type.String() })),
});

export function sandboxRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const books = createSandboxBooks(ctx.store, ctx.clock);
    const deliveries = createWebhookDeliveries(ctx, books);
    const outbox = createSandboxOutbox(ctx.store, ctx.clock);
    // A confirmation whose webhook was still being retried when the service stopped is delivered after restart.
    for (const row of await books.undelivered()) deliveries.start(row.payment_id);

    app.post<{ Body: SandboxPaymentRequest }>(
      '/sandbox/payments',
      { schema: { body: SandboxPaymentRequest, response: { 201: SandboxPayment } } },
      async (request, reply) => {
        const { offer_id, customer_email, amount_cents } = request.body;
        const row = await books.create({
          offer_id,
          customer_email: normalizeEmail(customer_email),
          merchant_id: ctx.merchantId,
          amount_cents: amount_cents ?? TIERS[offer_id].sandbox_default_amount_cents,
        });
        return reply.status(201).send(toSandboxPayment(row));
      },
    );

    // Answers at once; the webhook follows in the background (webhook_delivered turns true when it arrived).
    // Confirming again keeps the one event id, so the service acknowledges any repeat as a replay.
    app.post<{ Params: { id: string } }>(
      '/sandbox/payments/:id/confirm',
      { schema: { params: PaymentParams, response: { 200: SandboxPayment } } },
      async (request) => {
        const row = existing(await books.confirm(request.params.id), request.params.id);
        if (row.webhook_delivered_at === null) deliveries.start(row.payment_id);
        return toSandboxPayment(row);
      },
    );

    // The sandbox's outbox (docs/api.md "Mail"): what it sent an address, newest first, so a developer reads a sign-in
    // code without a mail relay. Sandbox only, like the rest of this file.
    app.get<{ Querystring: Static<typeof MailQuery> }>(
      '/sandbox/mail',
      { schema: { querystring: MailQuery, response: { 200: MailResponse } } },
      async (request) => {
        const messages = await outbox.to(request.query.to, request.query.limit === undefined ? 10 : Number(request.query.limit));
        return { messages: messages.map((message) => ({ ...message, sent_at: isoTime(message.sent_at) })) };
      },
    );

    app.get<{ Params: { id: string } }>(
      '/sandbox/payments/:id',
      { schema: { params: PaymentParams, response: { 200: SandboxPayment } } },
      async (request) => toSandboxPayment(existing(await books.find(request.params.id), request.params.id)),
    );
  };
}

function existing(row: SandboxPaymentRow | undefined, paymentId: string): SandboxPaymentRow {
  if (row === undefined) throw new SvcError('payment_not_found', `the sandbox provider has no payment ${paymentId}`);
  return row;
}

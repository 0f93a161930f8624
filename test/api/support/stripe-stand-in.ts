// A local stand-in for Stripe's API (svc-api's SVC_STRIPE_API_BASE), answering as the documented API does
// (https://docs.stripe.com/api): Checkout Session and PaymentIntent objects by id, the Checkout Session list filtered
// by payment_intent, and Stripe's error object with its status (404 resource_missing, 500 api_error). A test puts
// the objects its checkout "created at Stripe" into `objects`, and reads what the service asked in `requests`.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type StripeObject = Record<string, unknown> & { id: string; object: string };

export interface StripeStandIn {
  /** http://127.0.0.1:PORT, the value of SVC_STRIPE_API_BASE. */
  url: string;
  objects: Map<string, StripeObject>;
  requests: { method: string; path: string; authorization: string | undefined }[];
  /** Ids whose retrieval fails: a 500 api_error, or the connection dropped with no answer. */
  failing: Map<string, 'api_error' | 'drop'>;
  close(): Promise<void>;
}

export async function startStripeStandIn(): Promise<StripeStandIn> {
  const objects = new Map<string, StripeObject>();
  const requests: StripeStandIn['requests'] = [];
  const failing = new Map<string, 'api_error' | 'drop'>();

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://stand-in');
    requests.push({ method: request.method ?? '', path: `${url.pathname}${url.search}`, authorization: request.headers.authorization });
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomBytes(7).toString('hex')}` });
      response.end(JSON.stringify(body));
    };
    const retrieve = /^\/v1\/(checkout\/sessions|payment_intents)\/([^/]+)$/.exec(url.pathname);
    if (request.method === 'GET' && retrieve) {
      const [, collection, id] = retrieve as unknown as [string, string, string];
      const failure = failing.get(id);
      if (failure === 'drop') return void request.socket.destroy();
      if (failure === 'api_error') return send(500, { error: { type: 'api_error', message: 'An unknown error occurred' } });
      const object = objects.get(id);
      const kind = collection === 'payment_intents' ? 'payment_intent' : 'checkout.session';
      if (object === undefined || object.object !== kind) return send(404, resourceMissing(kind, id));
      return send(200, object);
    }
    if (request.method === 'GET' && url.pathname === '/v1/checkout/sessions') {
      const intent = url.searchParams.get('payment_intent');
      const data = [...objects.values()].filter((o) => o.object === 'checkout.session' && (intent === null || o.payment_intent === intent));
      return send(200, { object: 'list', data, has_more: false, url: '/v1/checkout/sessions' });
    }
    send(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${request.method}: ${url.pathname}).` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    objects,
    requests,
    failing,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function resourceMissing(kind: string, id: string) {
  const param = kind === 'payment_intent' ? 'intent' : 'session';
  return {
    error: {
      code: 'resource_missing',
      doc_url: 'https://stripe.com/docs/error-codes/resource-missing',
      message: `No such ${kind}: '${id}'`,
      param,
      type: 'invalid_request_error',
    },
  };
}

const stripeId = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1000);

/** A Checkout Session in payment mode as Stripe returns it (the fields the service reads, and their neighbours). */
export function checkoutSession(fields: {
  email: string | null;
  offer_id?: string;
  amount_subtotal: number;
  currency?: string;
  payment_status?: 'paid' | 'unpaid' | 'no_payment_required';
  payment_intent?: string | null;
}): StripeObject {
  const paid = (fields.payment_status ?? 'paid') === 'paid';
  return {
    id: stripeId('cs_test'),
    object: 'checkout.session',
    amount_subtotal: fields.amount_subtotal,
    amount_total: fields.amount_subtotal,
    client_reference_id: null,
    created: now(),
    currency: fields.currency ?? 'usd',
    customer: null,
    customer_details: fields.email === null ? null : { email: fields.email, name: 'A Payer', phone: null, tax_exempt: 'none', tax_ids: [] },
    customer_email: null,
    livemode: false,
    metadata: fields.offer_id === undefined ? {} : { offer_id: fields.offer_id },
    mode: 'payment',
    payment_intent: fields.payment_intent === undefined ? stripeId('pi') : fields.payment_intent,
    payment_status: fields.payment_status ?? 'paid',
    status: paid ? 'complete' : 'open',
    success_url: 'https://shop.example.com/paid?session_id={CHECKOUT_SESSION_ID}',
    url: null,
  };
}

/** A PaymentIntent as Stripe returns it; `metadata` as its creator set it. */
export function paymentIntent(fields: {
  id?: string;
  receipt_email: string | null;
  metadata: Record<string, string>;
  amount: number;
  currency?: string;
  status?: 'succeeded' | 'processing' | 'requires_payment_method';
}): StripeObject {
  const succeeded = (fields.status ?? 'succeeded') === 'succeeded';
  return {
    id: fields.id ?? stripeId('pi'),
    object: 'payment_intent',
    amount: fields.amount,
    amount_received: succeeded ? fields.amount : 0,
    capture_method: 'automatic',
    client_secret: null,
    created: now(),
    currency: fields.currency ?? 'usd',
    customer: null,
    latest_charge: succeeded ? stripeId('ch') : null,
    livemode: false,
    metadata: fields.metadata,
    payment_method_types: ['card'],
    receipt_email: fields.receipt_email,
    status: fields.status ?? 'succeeded',
  };
}

/** The event Stripe sends to a webhook endpoint (a snapshot event: the object as it was). */
export function stripeEvent(type: string, object: StripeObject): Record<string, unknown> {
  return {
    id: stripeId('evt'),
    object: 'event',
    api_version: '2026-10-28.endive',
    created: now(),
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
}

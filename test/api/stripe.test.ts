// svc-api with SVC_PAYMENT_PROVIDER=stripe (docs/api.md "Payments with Stripe"), over real HTTP: Stripe's webhook
// signed by the official package's own test helper, and payment lookups through the official client against a
// local stand-in that answers as Stripe's API does. One service and one stand-in for the whole file.
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailedCode, MERCHANT_ID } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { confirmedEvent, dbSnapshot, deliverWebhook, paymentData } from './support/paygate-support.js';
import {
  checkoutSession,
  paymentIntent,
  startStripeStandIn,
  stripeEvent,
  type StripeObject,
  type StripeStandIn,
} from './support/stripe-stand-in.js';

const SECRET_KEY = 'sk_test_standInKey0123456789';
const WEBHOOK_SECRET = 'whsec_standInSigningSecret0123456789';

describe('payments with Stripe (SVC_PAYMENT_PROVIDER=stripe)', () => {
  let stripe: StripeStandIn;
  let service: TestService;

  beforeAll(async () => {
    stripe = await startStripeStandIn();
    service = await startSvcApi({
      sandbox: false,
      env: {
        SVC_PAYMENT_PROVIDER: 'stripe',
        SVC_STRIPE_SECRET_KEY: SECRET_KEY,
        SVC_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        SVC_STRIPE_API_BASE: stripe.url,
      },
    });
  });
  afterAll(async () => {
    await service?.close();
    await stripe?.close();
    removeTempDirs();
  });

  const api = () => apiClient(service.baseUrl);
  const payment = (id: string) =>
    service.db.prepare('SELECT * FROM payments WHERE payment_id = ?').get(id) as Record<string, unknown> | undefined;
  /** What the checkout created at Stripe: the stand-in answers lookups with it. */
  const atStripe = (object: StripeObject) => (stripe.objects.set(object.id, object), object);

  /** POSTs the event as Stripe does: the raw JSON, signed by the package's own test helper. */
  function deliver(event: unknown, options: { secret?: string; timestamp?: number; header?: string; rawBody?: string } = {}) {
    const payload = JSON.stringify(event);
    const header =
      options.header ??
      Stripe.webhooks.generateTestHeaderString({
        payload,
        secret: options.secret ?? WEBHOOK_SECRET,
        timestamp: options.timestamp ?? Math.floor(Date.now() / 1000),
      });
    return httpRequest(`${service.baseUrl}/v1/payments/webhook`, {
      method: 'POST',
      rawBody: options.rawBody ?? payload,
      headers: { 'content-type': 'application/json', 'stripe-signature': header },
    });
  }

  // The sign-in proves the inbox with a mailed code; the payment id only names a payment whose webhook may be lost.
  const issueToken = async (payment_id: string, customer_email: string, proof?: { challenge_id: string; code: string }) =>
    api().post('/v1/auth/issue-token', {
      status: 'CONFIRMED',
      offer_id: 'svc_starter_agents',
      customer_email,
      merchant_id: MERCHANT_ID,
      payment_id,
      ...(proof ?? (await mailedCode(service.baseUrl, customer_email))),
    });

  describe('the webhook', () => {
    it('records a paid checkout.session.completed as CONFIRMED under the session id, once: a replay changes nothing', async () => {
      const email = uniqueEmail('stripe');
      const session = checkoutSession({ email: email.toUpperCase(), offer_id: 'svc_starter_agents', amount_subtotal: 4900 });
      const event = stripeEvent('checkout.session.completed', session);
      const response = await deliver(event);
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ received: true, payment_id: session.id });
      expect(payment(session.id)).toMatchObject({
        status: 'CONFIRMED',
        customer_email: email,
        offer_id: 'svc_starter_agents',
        merchant_id: MERCHANT_ID,
        amount_cents: 4900,
      });

      const before = dbSnapshot(service.db);
      expect((await deliver(event)).body).toEqual({ received: true, duplicate: true });
      expect(dbSnapshot(service.db)).toEqual(before);
    });

    it('credits a wallet fund paid through Checkout once, though its PaymentIntent (with the offer copied) succeeds too', async () => {
      const email = uniqueEmail('fund');
      const intent = paymentIntent({ receipt_email: email, metadata: { offer_id: 'svc_pay_wallet_fund' }, amount: 1500 });
      const session = atStripe(
        checkoutSession({ email, offer_id: 'svc_pay_wallet_fund', amount_subtotal: 1500, payment_intent: intent.id }),
      );
      expect((await deliver(stripeEvent('checkout.session.completed', session))).body).toEqual({ received: true, payment_id: session.id });
      expect((await deliver(stripeEvent('payment_intent.succeeded', intent))).body).toEqual({ received: true, ignored: true });
      expect(stripe.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v1/checkout/sessions?payment_intent=${intent.id}&limit=1` });
      expect(payment(intent.id)).toBeUndefined();
      expect(await service.ctx.ledger.balance(email)).toBe(1500);
    });

    it('confirms a PaymentIntent made without Checkout under its own id, and credits a wallet fund', async () => {
      const email = uniqueEmail('element');
      const intent = paymentIntent({ receipt_email: email, metadata: { offer_id: 'svc_pay_wallet_fund' }, amount: 700 });
      expect((await deliver(stripeEvent('payment_intent.succeeded', intent))).body).toEqual({ received: true, payment_id: intent.id });
      expect(await service.ctx.ledger.balance(email)).toBe(700);
    });

    it('ignores a session completed unpaid, then confirms it on checkout.session.async_payment_succeeded', async () => {
      const email = uniqueEmail('sepa');
      const unpaid = checkoutSession({ email, offer_id: 'dev_portal_execution_billing', amount_subtotal: 2900, payment_status: 'unpaid' });
      expect((await deliver(stripeEvent('checkout.session.completed', unpaid))).body).toEqual({ received: true, ignored: true });
      expect(payment(unpaid.id)).toBeUndefined();
      const paid = { ...unpaid, payment_status: 'paid', status: 'complete' };
      expect((await deliver(stripeEvent('checkout.session.async_payment_succeeded', paid))).body).toEqual({
        received: true,
        payment_id: unpaid.id,
      });
    });

    it("still takes the service's own Svc-Signature deliveries", async () => {
      const data = paymentData({ customer_email: uniqueEmail('own') });
      expect((await deliverWebhook(service, confirmedEvent(data))).body).toEqual({ received: true, payment_id: data.payment_id });
    });

    const starter = (fields: Partial<Parameters<typeof checkoutSession>[0]> = {}) =>
      stripeEvent(
        'checkout.session.completed',
        checkoutSession({ email: uniqueEmail('bad'), offer_id: 'svc_starter_agents', amount_subtotal: 4900, ...fields }),
      );
    const cases: [string, () => [unknown, Parameters<typeof deliver>[1]], number, RegExp][] = [
      [
        'signed with another secret',
        () => [starter(), { secret: 'whsec_someoneElse' }],
        401,
        /^the Stripe-Signature does not match the body$/,
      ],
      ['a timestamp 301 s old', () => [starter(), { timestamp: Math.floor(Date.now() / 1000) - 301 }], 401, /more than 300 s old/],
      [
        'a body changed after signing',
        () => {
          const event = starter();
          const header = Stripe.webhooks.generateTestHeaderString({ payload: JSON.stringify(event), secret: WEBHOOK_SECRET });
          return [event, { header, rawBody: JSON.stringify(event).replace('4900', '4901') }];
        },
        401,
        /does not match/,
      ],
      ['a malformed header', () => [starter(), { header: 'garbage' }], 401, /must be "t=<unix seconds>,v1=/],
      [
        'an unknown offer',
        () => [starter({ offer_id: 'svc_gold_plan' }), {}],
        422,
        /offer_id "svc_gold_plan", which this service does not sell/,
      ],
      [
        'an amount that is not the price',
        () => [starter({ amount_subtotal: 4000 }), {}],
        422,
        /is 4000 usd cents, but svc_starter_agents costs 4900 usd cents/,
      ],
      ['another currency', () => [starter({ currency: 'eur' }), {}], 422, /is 4900 eur cents/],
      ['no customer e-mail', () => [starter({ email: null }), {}], 400, /has no usable customer e-mail/],
      [
        'an event type the service ignores',
        () => [stripeEvent('charge.refunded', paymentIntent({ receipt_email: null, metadata: {}, amount: 1 })), {}],
        200,
        /"ignored":true/,
      ],
      ['a checkout of another product (no offer_id)', () => [starter({ offer_id: undefined }), {}], 200, /"ignored":true/],
    ];
    it.each(cases)('answers %s clearly and changes nothing', async (_label, build, status, answer) => {
      const [event, options] = build();
      const before = dbSnapshot(service.db);
      const response = await deliver(event, options);
      expect(response.status, response.text).toBe(status);
      expect(status === 200 ? response.text : response.body.detail).toMatch(answer);
      expect(response.text).not.toContain(WEBHOOK_SECRET);
      expect(dbSnapshot(service.db)).toEqual(before);
    });
  });

  describe('the lookup through the official client', () => {
    it('finds a paid Checkout Session whose webhook never came, asking with the configured key, once', async () => {
      const email = uniqueEmail('lost');
      const session = atStripe(checkoutSession({ email, offer_id: 'svc_starter_agents', amount_subtotal: 4900 }));
      const response = await issueToken(session.id, email);
      expect(response.status, response.text).toBe(201);
      expect(stripe.requests.at(-1)).toEqual({
        method: 'GET',
        path: `/v1/checkout/sessions/${session.id}`,
        authorization: `Bearer ${SECRET_KEY}`,
      });
      expect(payment(session.id)).toMatchObject({ status: 'CONFIRMED', customer_email: email });
      // Recorded CONFIRMED: the next sign-in needs no word from Stripe.
      const asked = stripe.requests.length;
      expect((await issueToken(session.id, email)).status).toBe(201);
      expect(stripe.requests.length).toBe(asked);
    });

    it.each([
      ['an id Stripe does not know (its 404)', () => 'cs_test_unknown0123', 404, 'payment_not_found'],
      [
        'a session not paid yet',
        () =>
          atStripe(
            checkoutSession({ email: 'wait@example.com', offer_id: 'svc_starter_agents', amount_subtotal: 4900, payment_status: 'unpaid' }),
          ).id,
        409,
        'payment_not_confirmed',
      ],
      [
        'the PaymentIntent of a Checkout Session',
        () => {
          const intent = atStripe(
            paymentIntent({ receipt_email: 'wait@example.com', metadata: { offer_id: 'svc_starter_agents' }, amount: 4900 }),
          );
          atStripe(
            checkoutSession({
              email: 'wait@example.com',
              offer_id: 'svc_starter_agents',
              amount_subtotal: 4900,
              payment_intent: intent.id,
            }),
          );
          return intent.id;
        },
        404,
        'payment_not_found',
      ],
      ['an id of another kind (never sent to Stripe)', () => 'ch_3MmlLrLkdIwHu7ix0snN0B15', 404, 'payment_not_found'],
    ])('answers %s', async (_label, id, status, code) => {
      const paymentId = id();
      const response = await issueToken(paymentId, 'wait@example.com');
      expect(response.status, response.text).toBe(status);
      expect(response.body.code).toBe(code);
      expect(stripe.requests.some((request) => request.path.includes(paymentId))).toBe(!paymentId.startsWith('ch_'));
    });

    it.each([
      ['answers 500', 'api_error'],
      ['drops the connection', 'drop'],
    ] as const)('answers 503 and changes nothing when Stripe %s', async (_label, failure) => {
      const session = atStripe(checkoutSession({ email: 'down@example.com', offer_id: 'svc_starter_agents', amount_subtotal: 4900 }));
      stripe.failing.set(session.id, failure);
      const proof = await mailedCode(service.baseUrl, 'down@example.com');
      const before = dbSnapshot(service.db);
      const response = await issueToken(session.id, 'down@example.com', proof);
      expect(response.status, response.text).toBe(503);
      expect(response.body).toMatchObject({
        code: 'service_unavailable',
        detail: 'the payment provider could not be asked about this payment; nothing was changed',
      });
      expect(response.headers.get('retry-after')).toBe('5');
      expect(dbSnapshot(service.db)).toEqual(before);
    });
  });

  it('takes a paid Stripe checkout through the sign-in and activation to a JWT that unlocks the docs and a deploy token', async () => {
    const email = uniqueEmail('funnel');
    const created = await api().post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: email });
    expect(created.status, created.text).toBe(201);
    const session = atStripe(checkoutSession({ email, offer_id: 'svc_starter_agents', amount_subtotal: 4900 }));
    expect((await deliver(stripeEvent('checkout.session.completed', session))).status).toBe(200);

    const issued = await issueToken(session.id, email);
    expect(issued.status, issued.text).toBe(201);
    expect(issued.body).toMatchObject({ token_type: 'Bearer', tier: 'svc_starter_agents' });
    const activated = await api().post(
      '/v1/swarm/paygate/activate',
      { session_id: created.body.session_id, payment_id: session.id },
      { token: issued.body.jwtToken },
    );
    expect(activated.status, activated.text).toBe(200);
    expect(activated.body.deploy_token).toEqual(expect.any(String));
    const docs = await api().get('/v1/docs', issued.body.jwtToken);
    expect(docs.status, docs.text).toBe(200);
    expect(docs.body.tier).toBe('svc_starter_agents');
  });
});

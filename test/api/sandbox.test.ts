import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { verifyWebhookSignature } from '../../src/api/payments/webhook-signature.js';
import { createPayment, waitFor } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { dbSnapshot, rowCount } from './support/paygate-support.js';
import { mintToken } from '../helpers/tokens.js';

interface Delivery {
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** A real HTTP endpoint standing between the sandbox and the service: fails the first `failures` deliveries. */
async function flakyRelay(target: () => string, failures: number): Promise<{ url: string; deliveries: Delivery[]; server: Server }> {
  const deliveries: Delivery[] = [];
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    deliveries.push({ headers: request.headers, body });
    if (deliveries.length <= failures) {
      response.writeHead(503).end();
      return;
    }
    const forwarded = await fetch(`${target()}${request.url}`, {
      method: 'POST',
      headers: { 'content-type': String(request.headers['content-type']), 'svc-signature': String(request.headers['svc-signature']) },
      body,
    });
    response.writeHead(forwarded.status, { 'content-type': 'application/json' }).end(await forwarded.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, deliveries, server };
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const sandboxRow = (service: TestService, paymentId: string) =>
  service.db.prepare('SELECT * FROM sandbox_payments WHERE payment_id = ?').get(paymentId) as Record<string, any>;

describe('sandbox payment provider', () => {
  let service: TestService;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    service = await startSvcApi();
    api = apiClient(service.baseUrl);
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('checks out a PENDING payment with the tier default amount, this merchant and the lowercased e-mail', async () => {
    const email = uniqueEmail('checkout');
    const response = await api.post('/sandbox/payments', { offer_id: 'svc_starter_agents', customer_email: email.toUpperCase() });
    expect(response.status, response.text).toBe(201);
    expect(response.body).toEqual({
      payment_id: expect.stringMatching(/^pay_[0-9a-f]{24}$/),
      status: 'PENDING',
      offer_id: 'svc_starter_agents',
      customer_email: email,
      merchant_id: 'merchant_local',
      amount_cents: 4900,
      created_at: expect.any(String),
      confirmed_at: null,
      webhook_delivered: false,
    });
    const fund = await api.post('/sandbox/payments', { offer_id: 'svc_pay_wallet_fund', customer_email: email, amount_cents: 2500 });
    expect(fund.body.amount_cents).toBe(2500);
    expect((await api.post('/sandbox/payments', { offer_id: 'svc_pay_wallet_fund', customer_email: email })).body.amount_cents).toBe(1000);
    expect((await api.get(`/sandbox/payments/${response.body.payment_id}`)).body).toEqual(response.body);
    // The provider's books, not the service's: nothing is known to the service before the webhook.
    expect(service.db.prepare('SELECT * FROM payments WHERE payment_id = ?').get(response.body.payment_id)).toBeUndefined();
  });

  it('confirms at once and delivers the signed webhook to the service in the background', async () => {
    const email = uniqueEmail('confirm');
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', email, 900);
    const confirmed = await api.post(`/sandbox/payments/${paymentId}/confirm`);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toMatchObject({ payment_id: paymentId, status: 'CONFIRMED', confirmed_at: expect.any(String) });
    await waitFor(async () => ((await api.get(`/sandbox/payments/${paymentId}`)).body.webhook_delivered ? true : undefined), 'delivery');
    expect(service.db.prepare('SELECT status, amount_cents FROM payments WHERE payment_id = ?').get(paymentId)).toEqual({
      status: 'CONFIRMED',
      amount_cents: 900,
    });
    expect(await service.ctx.ledger.balance(email)).toBe(900);
  });

  it('is idempotent: confirming twice keeps one event id, one event applied, one credit', async () => {
    const email = uniqueEmail('twice');
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', email, 400);
    const [first, second] = await Promise.all([
      api.post(`/sandbox/payments/${paymentId}/confirm`),
      api.post(`/sandbox/payments/${paymentId}/confirm`),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.confirmed_at).toBe(first.body.confirmed_at);
    await waitFor(async () => ((await api.get(`/sandbox/payments/${paymentId}`)).body.webhook_delivered ? true : undefined), 'delivery');
    const eventId = sandboxRow(service, paymentId).webhook_event_id;
    const third = await api.post(`/sandbox/payments/${paymentId}/confirm`);
    expect(third.body.webhook_delivered).toBe(true);
    expect(sandboxRow(service, paymentId).webhook_event_id).toBe(eventId);
    expect(service.db.prepare('SELECT count(*) AS n FROM webhook_events WHERE event_id = ?').get(eventId)).toEqual({ n: 1 });
    expect(await service.ctx.ledger.balance(email)).toBe(400);
  });

  it('retries a failed delivery with the same event and a fresh signature until the service has it', async () => {
    const relay = await flakyRelay(() => service.baseUrl, 2);
    const email = uniqueEmail('retry');
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', email, 600);
    const realBaseUrl = service.ctx.urls.baseUrl;
    service.ctx.urls.baseUrl = relay.url;
    try {
      expect((await api.post(`/sandbox/payments/${paymentId}/confirm`)).body.webhook_delivered).toBe(false);
      await waitFor(async () => ((await api.get(`/sandbox/payments/${paymentId}`)).body.webhook_delivered ? true : undefined), 'delivery');
    } finally {
      service.ctx.urls.baseUrl = realBaseUrl;
      relay.server.close();
    }
    expect(relay.deliveries).toHaveLength(3);
    expect(sandboxRow(service, paymentId).webhook_attempts).toBe(3);
    const bodies = relay.deliveries.map((d) => d.body.toString('utf8'));
    expect(new Set(bodies).size).toBe(1);
    const event = JSON.parse(bodies[0]!);
    expect(event).toEqual({
      id: sandboxRow(service, paymentId).webhook_event_id,
      type: 'payment.confirmed',
      created: expect.any(Number),
      data: {
        payment_id: paymentId,
        status: 'CONFIRMED',
        customer_email: email,
        offer_id: 'svc_pay_wallet_fund',
        merchant_id: 'merchant_local',
        amount_cents: 600,
      },
    });
    for (const delivery of relay.deliveries) {
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(() =>
        verifyWebhookSignature(service.secrets.webhookSecret, delivery.headers['svc-signature'], delivery.body, Date.now()),
      ).not.toThrow();
    }
    expect(await service.ctx.ledger.balance(email)).toBe(600);
  });

  it('answers 404 payment_not_found for an unknown payment and 400 for an id that is no id', async () => {
    const before = dbSnapshot(service.db);
    for (const response of [await api.get('/sandbox/payments/pay_unknown'), await api.post('/sandbox/payments/pay_unknown/confirm')]) {
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('payment_not_found');
    }
    for (const id of ['bad!id', 'a%20b', 'pay%0Aline']) {
      const bad = await api.get(`/sandbox/payments/${id}`);
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('invalid_request');
    }
    expect(dbSnapshot(service.db)).toEqual(before);
  });
});

describe('sandbox webhook delivery across shutdown and restart', () => {
  afterAll(() => removeTempDirs());

  it('stops retrying when the service closes, and delivers after a restart on the same data dir', async () => {
    const dataDir = tempDir('svc-api-restart-');
    const first = await startSvcApi({ dataDir });
    const email = uniqueEmail('restart');
    const paymentId = await createPayment(first.baseUrl, 'svc_pay_wallet_fund', email, 1100);
    first.ctx.urls.baseUrl = await closedPortUrl();
    expect((await apiClient(first.baseUrl).post(`/sandbox/payments/${paymentId}/confirm`)).status).toBe(200);
    await waitFor(async () => (sandboxRow(first, paymentId).webhook_attempts >= 2 ? true : undefined), 'failed attempts');
    const closeStarted = Date.now();
    await first.close();
    expect(Date.now() - closeStarted).toBeLessThan(2_000);

    const second = await startSvcApi({ dataDir });
    try {
      await waitFor(
        async () => ((await apiClient(second.baseUrl).get(`/sandbox/payments/${paymentId}`)).body.webhook_delivered ? true : undefined),
        'delivery after restart',
      );
      expect(await second.ctx.ledger.balance(email)).toBe(1100);
    } finally {
      await second.close();
    }
  });
});

describe('without --sandbox', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi({ sandbox: false });
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it('serves no sandbox routes and its provider knows no payment, so activation needs the webhook', async () => {
    const api = apiClient(service.baseUrl);
    const checkout = await api.post('/sandbox/payments', { offer_id: 'svc_starter_agents', customer_email: 'a@example.com' });
    expect(checkout.status).toBe(404);
    expect(checkout.body.code).toBe('not_found');
    expect(rowCount(service.db, 'sandbox_payments')).toBe(0);
    expect(await service.ctx.provider.lookupPayment('pay_anything')).toBeNull();
    const session = await api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: 'a@example.com' });
    const { token } = await mintToken(service, 'a@example.com', 'dev_portal_execution_billing');
    const activation = await api.post(
      '/v1/swarm/paygate/activate',
      { session_id: session.body.session_id, payment_id: 'pay_anything' },
      { token },
    );
    expect(activation.status).toBe(404);
    expect(activation.body.code).toBe('payment_not_found');
  });
});

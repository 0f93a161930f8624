import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { httpRequest } from '../helpers/http.js';
import { uniqueEmail } from '../helpers/temp.js';
import { confirmedEvent, dbSnapshot, deliverWebhook, paymentData, rowCount } from './support/paygate-support.js';

describe('POST /v1/payments/webhook', () => {
  const clock = new MovableClock();
  const service = useSvcApi(() => ({ clock }));

  const payment = (paymentId: string) =>
    service.db.prepare('SELECT * FROM payments WHERE payment_id = ?').get(paymentId) as Record<string, unknown> | undefined;

  it('records a signed payment.confirmed as CONFIRMED with its lowercased e-mail, offer, merchant and amount', async () => {
    const email = uniqueEmail('hook');
    const data = paymentData({ customer_email: email.toUpperCase(), offer_id: 'dev_portal_execution_billing', amount_cents: 2900 });
    const response = await deliverWebhook(service, confirmedEvent(data));
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ received: true, payment_id: data.payment_id });
    expect(payment(data.payment_id)).toMatchObject({
      status: 'CONFIRMED',
      customer_email: email,
      offer_id: 'dev_portal_execution_billing',
      merchant_id: 'merchant_local',
      amount_cents: 2900,
    });
    // Only wallet-fund payments move money.
    expect(await service.ctx.ledger.balance(email)).toBe(0);
  });

  it('credits a wallet-fund payment once; a replay is acknowledged as a duplicate and credits nothing', async () => {
    const email = uniqueEmail('fund');
    const event = confirmedEvent(paymentData({ customer_email: email, offer_id: 'svc_pay_wallet_fund', amount_cents: 1500 }));
    expect((await deliverWebhook(service, event)).body).toMatchObject({ received: true });
    expect(await service.ctx.ledger.balance(email)).toBe(1500);
    const before = dbSnapshot(service.db);
    const replay = await deliverWebhook(service, event);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ received: true, duplicate: true });
    expect(await service.ctx.ledger.balance(email)).toBe(1500);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('credits once when ten copies of one event arrive at the same moment', async () => {
    const email = uniqueEmail('storm');
    const event = confirmedEvent(paymentData({ customer_email: email, offer_id: 'svc_pay_wallet_fund', amount_cents: 700 }));
    const responses = await Promise.all(Array.from({ length: 10 }, () => deliverWebhook(service, event)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(responses.filter((r) => r.body.duplicate !== true)).toHaveLength(1);
    expect(await service.ctx.ledger.balance(email)).toBe(700);
    expect(service.db.prepare("SELECT count(*) AS n FROM ledger_entries WHERE user_id = ? AND kind = 'credit'").get(email)).toEqual({
      n: 1,
    });
  });

  it('credits a payment once even when the provider sends it under two event ids', async () => {
    const email = uniqueEmail('twoids');
    const data = paymentData({ customer_email: email, offer_id: 'svc_pay_wallet_fund', amount_cents: 300 });
    await Promise.all([deliverWebhook(service, confirmedEvent(data)), deliverWebhook(service, confirmedEvent(data))]);
    expect(await service.ctx.ledger.balance(email)).toBe(300);
  });

  it('keeps a confirmed record final: a later event with other details changes nothing', async () => {
    const email = uniqueEmail('final');
    const data = paymentData({ customer_email: email, offer_id: 'svc_pay_wallet_fund', amount_cents: 500 });
    await deliverWebhook(service, confirmedEvent(data));
    await deliverWebhook(service, confirmedEvent({ ...data, amount_cents: 99_999, customer_email: uniqueEmail('thief') }));
    expect(payment(data.payment_id)).toMatchObject({ customer_email: email, amount_cents: 500 });
    expect(await service.ctx.ledger.balance(email)).toBe(500);
  });

  it('does not credit a wallet-fund payment made to another merchant', async () => {
    const email = uniqueEmail('foreign');
    const data = paymentData({
      customer_email: email,
      offer_id: 'svc_pay_wallet_fund',
      merchant_id: 'merchant_elsewhere',
      amount_cents: 800,
    });
    expect((await deliverWebhook(service, confirmedEvent(data))).status).toBe(200);
    expect(payment(data.payment_id)).toMatchObject({ merchant_id: 'merchant_elsewhere' });
    expect(await service.ctx.ledger.balance(email)).toBe(0);
  });

  it('acknowledges and ignores an unknown event type, once', async () => {
    const event = { id: 'evt_refund_1', type: 'payment.refunded', created: 1, data: { anything: true } };
    const before = rowCount(service.db, 'payments');
    expect((await deliverWebhook(service, event)).body).toEqual({ received: true, ignored: true });
    expect((await deliverWebhook(service, event)).body).toEqual({ received: true, duplicate: true });
    expect(rowCount(service.db, 'payments')).toBe(before);
  });

  it('refuses a signed event whose bytes are not UTF-8 with 400 and records nothing (not U+FFFD)', async () => {
    const id = `evt_${Date.now()}_bytes`;
    const rawBody = Buffer.concat([
      Buffer.from(`{"id":"${id}","type":"payment.`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('","created":1,"data":{}}'),
    ]);
    const before = dbSnapshot(service.db);
    const response = await deliverWebhook(service, undefined, { rawBody });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'invalid_request', detail: 'the request body is not valid UTF-8' });
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('accepts a header with several v1 signatures when one matches (secret rotation)', async () => {
    const event = confirmedEvent(paymentData());
    const body = JSON.stringify(event);
    const t = Math.floor(clock.now() / 1000);
    const sign = (secret: string) => createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    const response = await deliverWebhook(service, event, {
      rawBody: body,
      signature: `t=${t},v1=${sign('whsec_old_secret')},v1=${sign(service.secrets.webhookSecret)}`,
    });
    expect(response.status, response.text).toBe(200);
  });

  it('accepts a timestamp 299 s old by the service clock', async () => {
    // The header carries whole seconds: signing at now - 299 s could floor to 299.999 s old, and one more
    // millisecond before the check crossed 300. Half a second of margin keeps it 298.5 to 299.5 s old.
    const response = await deliverWebhook(service, confirmedEvent(paymentData()), { nowMs: clock.now() - 298_500 });
    expect(response.status, response.text).toBe(200);
  });

  it('refuses a Stripe-Signature delivery with 401 naming the setting, when the service does not take Stripe payments', async () => {
    const body = JSON.stringify({
      id: 'evt_stripe_1',
      object: 'event',
      type: 'checkout.session.completed',
      created: 1,
      data: { object: {} },
    });
    const before = dbSnapshot(service.db);
    const response = await httpRequest(`${service.baseUrl}/v1/payments/webhook`, {
      method: 'POST',
      rawBody: body,
      headers: { 'content-type': 'application/json', 'stripe-signature': `t=${Math.floor(clock.now() / 1000)},v1=${'ab'.repeat(32)}` },
    });
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({
      code: 'unauthorized',
      detail: 'a Stripe-Signature delivery, but this service does not take Stripe payments',
    });
    expect(response.body.remedy).toMatch(/SVC_PAYMENT_PROVIDER=stripe/);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  describe('refuses with 401 and changes nothing', () => {
    const event = confirmedEvent(paymentData({ offer_id: 'svc_pay_wallet_fund', amount_cents: 100 }));
    const body = JSON.stringify(event);
    const now = () => clock.now();
    const t = () => Math.floor(now() / 1000);
    const hmac = (text: string, secret = service.secrets.webhookSecret) => createHmac('sha256', secret).update(text).digest('hex');

    const cases: [string, () => { signature?: string; rawBody?: string; nowMs?: number; secret?: string }][] = [
      ['no signature header', () => ({ signature: '' })],
      ['another secret', () => ({ secret: 'whsec_someone_else' })],
      ['a timestamp 301 s old', () => ({ nowMs: now() - 301_000 })],
      // Ahead by more than 301 s: the time the request takes to arrive comes off a timestamp in the future.
      ['a timestamp 330 s ahead', () => ({ nowMs: now() + 330_000 })],
      [
        'a body changed after signing',
        () => ({
          signature: `t=${t()},v1=${hmac(`${t()}.${body}`)}`,
          rawBody: body.replace('"amount_cents":100', '"amount_cents":100000'),
        }),
      ],
      ['the signature of another timestamp', () => ({ signature: `t=${t()},v1=${hmac(`${t() - 1}.${body}`)}` })],
      ['no t', () => ({ signature: `v1=${hmac(`${t()}.${body}`)}` })],
      ['no v1', () => ({ signature: `t=${t()}` })],
      ['a v1 of the wrong length', () => ({ signature: `t=${t()},v1=${hmac(`${t()}.${body}`).slice(0, 62)}` })],
      ['a v1 that is not hex', () => ({ signature: `t=${t()},v1=${'zz'.repeat(32)}` })],
      ['a non-numeric t', () => ({ signature: `t=soon,v1=${hmac(`soon.${body}`)}` })],
      ['only a v0 scheme', () => ({ signature: `t=${t()},v0=${hmac(`${t()}.${body}`)}` })],
      ['garbage', () => ({ signature: 'garbage' })],
    ];

    it.each(cases)('%s', async (_label, options) => {
      const before = dbSnapshot(service.db);
      const response = await deliverWebhook(service, event, { rawBody: body, ...options() });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.body.code).toBe('unauthorized');
      expect(response.body.remedy).toMatch(/webhook secret/);
      expect(response.text.includes(service.secrets.webhookSecret)).toBe(false);
      expect(dbSnapshot(service.db)).toEqual(before);
    });

    it('a delivery signed now but arriving after the service clock moved 301 s on', async () => {
      const signedNow = { signature: `t=${t()},v1=${hmac(`${t()}.${body}`)}`, rawBody: body };
      clock.advance(301_000);
      try {
        const before = dbSnapshot(service.db);
        expect((await deliverWebhook(service, event, signedNow)).status).toBe(401);
        expect(dbSnapshot(service.db)).toEqual(before);
      } finally {
        clock.advance(-301_000);
      }
    });
  });

  describe('refuses a signed event with bad data with 400, and takes a corrected resend of the same id', () => {
    const good = () => paymentData({ offer_id: 'svc_pay_wallet_fund', amount_cents: 250, customer_email: uniqueEmail('fix') });
    const cases: [string, (data: Record<string, unknown>) => unknown][] = [
      ['data missing', () => undefined],
      ['data not an object', () => 'CONFIRMED'],
      ['amount_cents missing', ({ amount_cents: _a, ...rest }) => rest],
      ['amount_cents negative', (d) => ({ ...d, amount_cents: -1 })],
      ['amount_cents fractional', (d) => ({ ...d, amount_cents: 2.5 })],
      ['amount_cents a string', (d) => ({ ...d, amount_cents: '250' })],
      ['a bad e-mail', (d) => ({ ...d, customer_email: 'not-an-email' })],
      ['status PENDING', (d) => ({ ...d, status: 'PENDING' })],
      ['payment_id with spaces', (d) => ({ ...d, payment_id: 'pay 1' })],
    ];

    it.each(cases)('%s', async (_label, corrupt) => {
      const data = good();
      const eventId = `evt_fix_${data.payment_id}`;
      const before = dbSnapshot(service.db);
      const bad = await deliverWebhook(service, { ...confirmedEvent(undefined, eventId), data: corrupt({ ...data }) });
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('invalid_request');
      expect(bad.body.errors?.[0]?.path).toMatch(/^\/data/);
      expect(dbSnapshot(service.db)).toEqual(before);

      expect((await deliverWebhook(service, confirmedEvent(data, eventId))).body).toEqual({ received: true, payment_id: data.payment_id });
      expect(await service.ctx.ledger.balance(data.customer_email)).toBe(250);
    });

    it.each([
      ['no id', { type: 'payment.confirmed', created: 1, data: {} }],
      ['created as a string', { id: 'evt_x', type: 'payment.confirmed', created: 'today', data: {} }],
      ['an array body', [1, 2]],
    ])('an event with %s', async (_label, event) => {
      const before = dbSnapshot(service.db);
      const response = await deliverWebhook(service, event);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('invalid_request');
      expect(dbSnapshot(service.db)).toEqual(before);
    });
  });
});

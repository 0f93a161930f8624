// Bad input on every endpoint of the pay gate, auth, enroll, webhook and sandbox provider: always a clear 4xx in
// problem+json with a `code`, never a 5xx, and the database exactly as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { recentToken, activatedSession, payAndConfirm } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { dbSnapshot } from './support/paygate-support.js';

interface BadRequest {
  label: string;
  rawBody?: string | Buffer;
  contentType?: string;
  /** Expected problem code. */
  code: string;
  status: number;
}

const ONE_MIB = 'x'.repeat(1024 * 1024);
const json = (value: unknown) => JSON.stringify(value);

/** What every JSON endpoint must refuse, whatever its fields. */
function transportCases(validBody: unknown): BadRequest[] {
  return [
    { label: 'malformed JSON', rawBody: '{"tier_id": ', code: 'invalid_request', status: 400 },
    { label: 'JSON with a trailing comma', rawBody: '{"a":1,}', code: 'invalid_request', status: 400 },
    // Decoded leniently, these bytes would be stored as U+FFFD: two different bodies, one stored value.
    {
      label: 'a JSON body whose bytes are not UTF-8',
      rawBody: Buffer.concat([Buffer.from('{"x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      code: 'invalid_request',
      status: 400,
    },
    { label: 'a 1 MiB body', rawBody: json({ ...(validBody as object), padding: ONE_MIB }), code: 'payload_too_large', status: 413 },
    { label: 'a text/plain body', rawBody: json(validBody), contentType: 'text/plain', code: 'unsupported_media_type', status: 415 },
    {
      label: 'a form body',
      rawBody: 'a=1&b=2',
      contentType: 'application/x-www-form-urlencoded',
      code: 'unsupported_media_type',
      status: 415,
    },
    { label: 'a body without content type', rawBody: json(validBody), contentType: '', code: 'unsupported_media_type', status: 415 },
  ];
}

/** What every endpoint with a required JSON object body must refuse. */
function shapeCases(validBody: Record<string, unknown>, wrongTypes: Record<string, unknown>): BadRequest[] {
  const firstField = Object.keys(validBody)[0]!;
  const { [firstField]: _dropped, ...missingOne } = validBody;
  return [
    { label: 'an empty body', rawBody: '', code: 'invalid_request', status: 400 },
    { label: 'JSON null', rawBody: 'null', code: 'invalid_request', status: 400 },
    { label: 'a JSON array', rawBody: json([validBody]), code: 'invalid_request', status: 400 },
    { label: 'a JSON string', rawBody: json('hello'), code: 'invalid_request', status: 400 },
    { label: 'an empty object', rawBody: '{}', code: 'invalid_request', status: 400 },
    { label: `no ${firstField}`, rawBody: json(missingOne), code: 'invalid_request', status: 400 },
    { label: 'an unknown extra field', rawBody: json({ ...validBody, admin: true }), code: 'invalid_request', status: 400 },
    ...Object.entries(wrongTypes).map(([field, value]) => ({
      label: `${field} = ${json(value)}`,
      rawBody: json({ ...validBody, [field]: value }),
      code: 'invalid_request',
      status: 400,
    })),
  ];
}

describe('bad input', () => {
  let service: TestService;
  const email = uniqueEmail('bad');
  let sessionId: string;
  let paymentId: string;
  let sandboxPaymentId: string;
  let deployToken: string;
  let jwt: string;

  beforeAll(async () => {
    service = await startSvcApi();
    ({ session_id: sessionId, payment_id: paymentId, deploy_token: deployToken } = await activatedSession(service.baseUrl, email));
    jwt = await recentToken(service.baseUrl, email, 'svc_starter_agents');
    sandboxPaymentId = await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  async function expectRefusedUnchanged(path: string, request: BadRequest, headers: Record<string, string> = {}): Promise<void> {
    const before = dbSnapshot(service.db);
    const contentType = request.contentType ?? 'application/json';
    const response = await httpRequest(`${service.baseUrl}${path}`, {
      method: 'POST',
      ...(request.rawBody === undefined ? {} : { rawBody: request.rawBody }),
      headers: { ...(contentType === '' ? {} : { 'content-type': contentType }), ...headers },
    });
    expect(response.status, response.text).toBe(request.status);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: request.status, code: request.code, type: `urn:svc:problem:${request.code}` });
    expect(typeof response.body.detail).toBe('string');
    if (request.code === 'invalid_request' && request.rawBody !== '' && !/JSON|trailing/.test(request.label)) {
      expect(response.body.errors?.length).toBeGreaterThan(0);
    }
    expect(dbSnapshot(service.db)).toEqual(before);
  }

  describe('POST /v1/swarm/paygate/session', () => {
    const valid = { tier_id: 'svc_starter_agents', user_id: 'someone@example.com' };
    const cases = [
      ...transportCases(valid),
      ...shapeCases(valid, { tier_id: 42, user_id: ['a@example.com'] }),
      { label: 'an unknown tier', rawBody: json({ ...valid, tier_id: 'svc_platinum' }), code: 'invalid_request', status: 400 },
      { label: 'a tier in other case', rawBody: json({ ...valid, tier_id: 'SVC_STARTER_AGENTS' }), code: 'invalid_request', status: 400 },
      { label: 'a user_id that is no e-mail', rawBody: json({ ...valid, user_id: 'someone' }), code: 'invalid_request', status: 400 },
      {
        label: 'a user_id of 300 characters',
        rawBody: json({ ...valid, user_id: `${'a'.repeat(60)}@${'b'.repeat(236)}.com` }),
        code: 'invalid_request',
        status: 400,
      },
      {
        label: 'an e-mail with a space',
        rawBody: json({ ...valid, user_id: 'some one@example.com' }),
        code: 'invalid_request',
        status: 400,
      },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) =>
      expectRefusedUnchanged('/v1/swarm/paygate/session', request),
    );
  });

  describe('POST /v1/swarm/paygate/activate', () => {
    const valid = () => ({ session_id: sessionId, payment_id: 'pay_x' });
    const cases = () => [
      ...transportCases(valid()),
      ...shapeCases(valid(), { session_id: 12345, payment_id: { id: 'pay_x' } }),
      {
        label: 'a session_id that is no UUID',
        rawBody: json({ ...valid(), session_id: 'not-a-uuid' }),
        code: 'invalid_request',
        status: 400,
      },
      {
        label: 'a session_id with a SQL tail',
        rawBody: json({ ...valid(), session_id: `${sessionId}' OR 1=1 --` }),
        code: 'invalid_request',
        status: 400,
      },
      { label: 'a payment_id with spaces', rawBody: json({ ...valid(), payment_id: 'pay 1' }), code: 'invalid_request', status: 400 },
      { label: 'an empty payment_id', rawBody: json({ ...valid(), payment_id: '' }), code: 'invalid_request', status: 400 },
      {
        label: 'a payment_id of 129 characters',
        rawBody: json({ ...valid(), payment_id: 'p'.repeat(129) }),
        code: 'invalid_request',
        status: 400,
      },
    ];
    it('refuses each bad request and changes nothing', async () => {
      // With the user's JWT: its body is read only once the credential passed.
      for (const request of cases())
        await expectRefusedUnchanged('/v1/swarm/paygate/activate', request, { authorization: `Bearer ${jwt}` });
    });
  });

  describe('POST /v1/auth/issue-token', () => {
    const valid = {
      status: 'CONFIRMED',
      offer_id: 'svc_starter_agents',
      customer_email: 'someone@example.com',
      merchant_id: 'merchant_local',
    };
    const cases = [
      ...transportCases(valid),
      ...shapeCases(valid, { status: true, offer_id: null, customer_email: 7, merchant_id: ['merchant_local'] }),
      { label: 'an unknown offer', rawBody: json({ ...valid, offer_id: 'free_tier' }), code: 'invalid_request', status: 400 },
      { label: 'a merchant_id with a slash', rawBody: json({ ...valid, merchant_id: 'a/b' }), code: 'invalid_request', status: 400 },
      { label: 'a 1 KiB status', rawBody: json({ ...valid, status: 'C'.repeat(1024) }), code: 'invalid_request', status: 400 },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) => expectRefusedUnchanged('/v1/auth/issue-token', request));
  });

  describe('POST /v1/auth/email-code', () => {
    const valid = { email: 'someone@example.com' };
    const cases = [
      ...transportCases(valid),
      ...shapeCases(valid, { email: 7 }),
      { label: 'an address that is not one', rawBody: json({ email: 'not-an-address' }), code: 'invalid_request', status: 400 },
      {
        label: 'an address of 300 characters',
        rawBody: json({ email: `${'a'.repeat(290)}@example.com` }),
        code: 'invalid_request',
        status: 400,
      },
      {
        label: 'a look-alike address (Kelvin sign)',
        rawBody: json({ email: '\u212Aate@example.com' }),
        code: 'invalid_request',
        status: 400,
      },
      {
        label: 'a header injection in the address',
        rawBody: json({ email: 'a@example.com\r\nBcc: b@example.com' }),
        code: 'invalid_request',
        status: 400,
      },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) => expectRefusedUnchanged('/v1/auth/email-code', request));
  });

  describe('POST /v1/auth/logout', () => {
    const cases = [
      { label: 'malformed JSON', rawBody: '{"everywhere": ', code: 'invalid_request', status: 400 },
      { label: 'everywhere as a string', rawBody: json({ everywhere: 'yes' }), code: 'invalid_request', status: 400 },
      { label: 'an unknown extra field', rawBody: json({ everywhere: true, jti: 'x' }), code: 'invalid_request', status: 400 },
      { label: 'a text/plain body', rawBody: json({}), contentType: 'text/plain', code: 'unsupported_media_type', status: 415 },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) =>
      expectRefusedUnchanged('/v1/auth/logout', request, { authorization: `Bearer ${jwt}` }),
    );
  });

  describe('POST /v1/auth/verify', () => {
    const valid = { token: 'a.b.c' };
    const cases = [
      ...transportCases(valid),
      { label: 'JSON null', rawBody: 'null', code: 'invalid_request', status: 400 },
      { label: 'a JSON array', rawBody: json([valid]), code: 'invalid_request', status: 400 },
      { label: 'token as a number', rawBody: json({ token: 5 }), code: 'invalid_request', status: 400 },
      { label: 'an unknown extra field', rawBody: json({ ...valid, tier: 'svc_starter_agents' }), code: 'invalid_request', status: 400 },
      { label: 'a 9 KiB token', rawBody: json({ token: 'a'.repeat(9 * 1024) }), code: 'invalid_request', status: 400 },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) => expectRefusedUnchanged('/v1/auth/verify', request));
  });

  describe('POST /v1/swarm/nodes/enroll', () => {
    // The body is ignored, but one that is not JSON is still refused, and the token is left unused.
    const cases = transportCases({ hostname: 'box-1' });
    it('refuses each bad request, changes nothing, and the deploy token still works after', async () => {
      for (const request of cases) {
        await expectRefusedUnchanged('/v1/swarm/nodes/enroll', request, { authorization: `Bearer ${deployToken}` });
      }
      const enrolled = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/enroll`, { method: 'POST', token: deployToken });
      expect(enrolled.status).toBe(200);
    });
  });

  describe('POST /v1/payments/webhook', () => {
    const cases = transportCases({ id: 'evt_1', type: 'payment.confirmed', created: 1, data: {} });
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) =>
      expectRefusedUnchanged('/v1/payments/webhook', request, { 'svc-signature': 't=1,v1=00' }),
    );
  });

  describe('POST /sandbox/payments', () => {
    const valid = { offer_id: 'svc_pay_wallet_fund', customer_email: 'someone@example.com', amount_cents: 500 };
    const cases = [
      ...transportCases(valid),
      ...shapeCases(valid, { offer_id: 1, customer_email: false, amount_cents: '500' }),
      {
        label: 'an amount in dollars with a fraction',
        rawBody: json({ ...valid, amount_cents: 5.25 }),
        code: 'invalid_request',
        status: 400,
      },
      { label: 'a zero amount', rawBody: json({ ...valid, amount_cents: 0 }), code: 'invalid_request', status: 400 },
      { label: 'a negative amount', rawBody: json({ ...valid, amount_cents: -100 }), code: 'invalid_request', status: 400 },
      {
        label: 'an amount over a million dollars',
        rawBody: json({ ...valid, amount_cents: 100_000_001 }),
        code: 'invalid_request',
        status: 400,
      },
      { label: 'an unknown offer', rawBody: json({ ...valid, offer_id: 'svc_gold' }), code: 'invalid_request', status: 400 },
    ];
    it.each(cases.map((c) => [c.label, c] as const))('%s', (_label, request) => expectRefusedUnchanged('/sandbox/payments', request));
  });

  describe('POST /sandbox/payments/:id/confirm', () => {
    it('refuses each bad request and changes nothing', async () => {
      for (const request of transportCases({})) {
        await expectRefusedUnchanged(`/sandbox/payments/${sandboxPaymentId}/confirm`, request);
      }
    });
  });

  it('answers every refusal with a remedy and never echoes a secret it was sent', async () => {
    const response = await httpRequest(`${service.baseUrl}/v1/swarm/paygate/activate`, {
      method: 'POST',
      rawBody: json({ session_id: sessionId, payment_id: paymentId, deploy_token: deployToken }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${jwt}` },
    });
    expect(response.status).toBe(400);
    expect(response.body.remedy).toEqual(expect.any(String));
    expect(response.text.includes(deployToken)).toBe(false);
  });
});

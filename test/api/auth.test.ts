import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { MovableClock } from '../helpers/clock.js';
import { MERCHANT_ID, mailedCode, payAndConfirm, signIn } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { UUID_V4, dbSnapshot } from './support/paygate-support.js';

const THIRTY_DAYS_SECONDS = 2_592_000;
const REASONS = [
  'malformed',
  'unsupported_algorithm',
  'bad_signature',
  'expired',
  'unknown_key',
  'invalid_claims',
  'unknown_token',
  'revoked',
];

const b64url = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('auth: issue-token and verify', () => {
  let service: TestService;
  let clock: MovableClock;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    clock = new MovableClock();
    service = await startSvcApi({ clock });
    api = apiClient(service.baseUrl);
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  const issue = (body: Record<string, unknown>) => api.post('/v1/auth/issue-token', body);
  const issueBody = (customer_email: string, offer_id: string, proof: { challenge_id: string; code: string } | Record<string, never>) => ({
    status: 'CONFIRMED',
    offer_id,
    customer_email,
    merchant_id: MERCHANT_ID,
    ...proof,
  });
  const verifyInBody = (token: string) => api.post('/v1/auth/verify', { token });

  describe('POST /v1/auth/issue-token', () => {
    it('issues an HS256 JWT with the spec claims and auth_time for a proven inbox and a confirmed payment, and records it', async () => {
      const email = uniqueEmail('issue');
      const paymentId = await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
      const response = await issue(issueBody(email, 'dev_portal_execution_billing', await mailedCode(service.baseUrl, email)));
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        jwtToken: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        token_type: 'Bearer',
        expires_at: expect.any(String),
        tier: 'dev_portal_execution_billing',
      });
      const header = decodeProtectedHeader(response.body.jwtToken);
      expect(header).toEqual({ alg: 'HS256', typ: 'JWT', kid: service.secrets.jwtKid });
      const claims = decodeJwt(response.body.jwtToken);
      expect(claims).toEqual({
        sub: email,
        tier: 'dev_portal_execution_billing',
        chainId: 1202,
        nodeAccess: 'isolated_svc_server',
        iss: expect.any(String),
        iat: expect.any(Number),
        exp: expect.any(Number),
        jti: expect.stringMatching(UUID_V4),
        auth_time: claims.iat,
      });
      expect(claims.exp! - claims.iat!).toBe(THIRTY_DAYS_SECONDS);
      expect(Math.abs(claims.iat! * 1000 - clock.now())).toBeLessThan(5_000);
      expect(response.body.expires_at).toBe(new Date(claims.exp! * 1000).toISOString());
      expect(service.db.prepare('SELECT sub, tier, kid, payment_id, revoked_at FROM issued_tokens WHERE jti = ?').get(claims.jti)).toEqual({
        sub: email,
        tier: 'dev_portal_execution_billing',
        kid: service.secrets.jwtKid,
        payment_id: paymentId,
        revoked_at: null,
      });
    });

    it('signs the lowercased e-mail whatever case the client used', async () => {
      const email = uniqueEmail('case');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', email.toUpperCase());
      const upper = email.replace(/^./, (c) => c.toUpperCase());
      const response = await issue(issueBody(upper, 'svc_starter_agents', await mailedCode(service.baseUrl, upper)));
      expect(response.status, response.text).toBe(201);
      expect(decodeJwt(response.body.jwtToken).sub).toBe(email);
    });

    it.each(['PENDING', 'confirmed', 'FAILED', ''])('answers 409 payment_not_confirmed when the body says status %j', async (status) => {
      const email = uniqueEmail('status');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      const proof = await mailedCode(service.baseUrl, email);
      const before = dbSnapshot(service.db);
      const response = await issue({ ...issueBody(email, 'svc_starter_agents', proof), status });
      expect(response.status).toBe(409);
      expect(response.body.code).toBe('payment_not_confirmed');
      expect(dbSnapshot(service.db)).toEqual(before);
    });

    it('answers 422 payment_mismatch for another merchant', async () => {
      const email = uniqueEmail('merchant');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      const proof = await mailedCode(service.baseUrl, email);
      const before = dbSnapshot(service.db);
      const response = await issue({ ...issueBody(email, 'svc_starter_agents', proof), merchant_id: 'merchant_elsewhere' });
      expect(response.status).toBe(422);
      expect(response.body.code).toBe('payment_mismatch');
      expect(dbSnapshot(service.db)).toEqual(before);
    });

    it("a one-cent payment in the victim's name proves nothing: with it and every id of it, no token is issued, and nothing changes", async () => {
      const victim = uniqueEmail('victim');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', victim);
      // The attacker pays one cent naming the victim, and knows that payment's id.
      const cent = await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', victim, 1);
      const before = dbSnapshot(service.db);
      for (const body of [
        issueBody(victim, 'svc_pay_wallet_fund', {}),
        { ...issueBody(victim, 'svc_pay_wallet_fund', {}), payment_id: cent },
        issueBody(victim, 'svc_starter_agents', {}),
      ]) {
        const response = await issue(body);
        expect(response.status).toBe(400);
        expect(response.body.code).toBe('invalid_request');
        expect(response.text).not.toMatch(/eyJ/);
      }
      expect((await issue(issueBody(victim, 'svc_pay_wallet_fund', {}))).body).toMatchObject({
        errors: [{ path: '/challenge_id', message: 'is required' }],
      });
      expect(dbSnapshot(service.db)).toEqual(before);
    });

    it("a code mailed to the attacker's own inbox signs nobody else in: the victim's address with it is 401, and nothing is issued", async () => {
      const victim = uniqueEmail('victim');
      await payAndConfirm(service.baseUrl, 'svc_starter_agents', victim);
      const attacker = uniqueEmail('mallory');
      const own = await mailedCode(service.baseUrl, attacker);
      const response = await issue(issueBody(victim, 'svc_starter_agents', own));
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('email_code_invalid');
      expect(service.db.prepare('SELECT count(*) AS n FROM issued_tokens WHERE sub = ?').get(victim)).toEqual({ n: 0 });
    });

    it('with a proven inbox: an offer never paid is 404 naming the offers paid for, a pending one 409, and the same code then works', async () => {
      const email = uniqueEmail('payer');
      await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
      const proof = await mailedCode(service.baseUrl, email);
      const never = await issue(issueBody(email, 'svc_starter_agents', proof));
      expect(never.status).toBe(404);
      expect(never.body).toMatchObject({ code: 'payment_not_found', paid_offers: ['dev_portal_execution_billing'] });
      // A Stripe-style record of the provider's PENDING word (the lookup records it) makes the offer "not yet".
      service.db
        .prepare(
          "INSERT INTO payments (payment_id, status, customer_email, offer_id, merchant_id, amount_cents, confirmed_at, recorded_at) VALUES (?, 'PENDING', ?, 'svc_starter_agents', ?, 4900, NULL, ?)",
        )
        .run(`pay_pending_${randomBytes(4).toString('hex')}`, email, MERCHANT_ID, clock.now());
      const notYet = await issue(issueBody(email, 'svc_starter_agents', proof));
      expect(notYet.status).toBe(409);
      expect(notYet.body.code).toBe('payment_not_confirmed');
      expect(Number(notYet.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(service.db.prepare('SELECT count(*) AS n FROM issued_tokens WHERE sub = ?').get(email)).toEqual({ n: 0 });
      expect((await issue(issueBody(email, 'dev_portal_execution_billing', proof))).status).toBe(201);
      // Spent now: the code signs in once.
      const again = await issue(issueBody(email, 'dev_portal_execution_billing', proof));
      expect(again.status).toBe(401);
      expect(again.body.code).toBe('email_code_invalid');
    });

    it('never folds a look-alike address: a payment made as \\u212Aate@ (Kelvin sign) entitles nothing for kate@', async () => {
      const domain = `victim-${randomBytes(3).toString('hex')}.com`;
      const lookAlike = `\u212Aate@${domain}`;
      // The provider (the sandbox stands for one) takes whatever address its payer typed.
      const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', lookAlike);
      expect(service.db.prepare('SELECT customer_email FROM payments WHERE payment_id = ?').get(paymentId)).toEqual({
        customer_email: lookAlike,
      });
      const kate = `kate@${domain}`;
      const asKate = await issue(issueBody(kate, 'svc_starter_agents', await mailedCode(service.baseUrl, kate)));
      expect(asKate.status).toBe(404);
      expect(asKate.body).toMatchObject({ code: 'payment_not_found', paid_offers: [] });
      // A client may not use the look-alike itself: addresses a client gives are ASCII.
      const asLookAlike = await api.post('/v1/auth/email-code', { email: lookAlike });
      expect(asLookAlike.status).toBe(400);
      expect(asLookAlike.body.errors[0].path).toBe('/email');
    });
  });

  describe('POST /v1/auth/verify', () => {
    let email: string;
    let token: string;
    beforeAll(async () => {
      email = uniqueEmail('verify');
      token = await signIn(service.baseUrl, email, 'svc_starter_agents');
    });

    const validAnswer = () => ({
      valid: true,
      tier_key: 'svc_starter_agents',
      docs_sections: ['starter-agents', 'node-install', 'agent-upload'],
      payment_rail: 'svc_pay_wallet:1202',
      sub: email,
      expires_at: new Date(decodeJwt(token).exp! * 1000).toISOString(),
    });

    it('accepts the token in the body, in the header, or in both when they agree', async () => {
      expect((await verifyInBody(token)).body).toEqual(validAnswer());
      const headerOnly = await api.post('/v1/auth/verify', undefined, { token });
      expect(headerOnly.status).toBe(200);
      expect(headerOnly.body).toEqual(validAnswer());
      const emptyJson = await httpRequest(`${service.baseUrl}/v1/auth/verify`, {
        method: 'POST',
        token,
        rawBody: '',
        headers: { 'content-type': 'application/json' },
      });
      expect(emptyJson.body).toEqual(validAnswer());
      const both = await api.post('/v1/auth/verify', { token }, { token });
      expect(both.body).toEqual(validAnswer());
    });

    it('unlocks the sections of each tier', async () => {
      const walletToken = await signIn(service.baseUrl, uniqueEmail('fund'), 'svc_pay_wallet_fund');
      expect((await verifyInBody(walletToken)).body).toMatchObject({
        valid: true,
        tier_key: 'svc_pay_wallet_fund',
        docs_sections: ['wallet-funding'],
      });
      const devToken = await signIn(service.baseUrl, uniqueEmail('dev'), 'dev_portal_execution_billing');
      expect((await verifyInBody(devToken)).body.docs_sections).toEqual(['dev-portal', 'execution-billing', 'agent-upload']);
    });

    it('answers 400 when the token is missing, or the header and body disagree, or the header is not Bearer', async () => {
      const other = await signIn(service.baseUrl, uniqueEmail('other'));
      const cases = [
        await api.post('/v1/auth/verify', {}),
        await httpRequest(`${service.baseUrl}/v1/auth/verify`, { method: 'POST' }),
        await api.post('/v1/auth/verify', { token: other }, { token }),
        await api.post('/v1/auth/verify', { token }, { headers: { authorization: `Basic ${b64url('a:b')}` } }),
      ];
      for (const response of cases) {
        expect(response.status).toBe(400);
        expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(response.body.code).toBe('invalid_request');
        expect(response.text.includes(token)).toBe(false);
      }
    });

    it('refuses a token signed with its own key but never issued (no record of its jti): valid false, unknown_token', async () => {
      const now = Math.floor(clock.now() / 1000);
      const claims = decodeJwt(token);
      const signingInput = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url({
        sub: email,
        tier: 'svc_starter_agents',
        chainId: 1202,
        nodeAccess: 'isolated_svc_server',
        iss: claims.iss,
        iat: now,
        exp: now + 3600,
        jti: randomUUID(), // well-formed, and issued by no one
      })}`;
      const signature = createHmac('sha256', Buffer.from(service.secrets.jwtKey)).update(signingInput).digest('base64url');
      const response = await verifyInBody(`${signingInput}.${signature}`);
      expect(response.body).toEqual({ valid: false, reason: 'unknown_token' });
      // Nor does it spend: a key leaked from a backup mints nothing the service did not record.
      const spend = await api.post(
        '/v1/swarm/execute',
        { user_id: email, agent_id: 'agent_ops_monitor_004' },
        {
          token: `${signingInput}.${signature}`,
          headers: { 'idempotency-key': `forged-${randomBytes(4).toString('hex')}` },
        },
      );
      expect(spend.status).toBe(401);
    });

    describe('answers 200 valid:false, never an error, for', () => {
      const parts = () => token.split('.') as [string, string, string];
      const claimsWith = (overrides: Record<string, unknown>) => ({ ...decodeJwt(token), ...overrides });
      const signWith = (key: Uint8Array, claims: Record<string, unknown>, header: Record<string, unknown>) =>
        new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key);

      const cases: [string, () => Promise<string> | string, string | undefined][] = [
        ['garbage', () => 'not-a-jwt', 'malformed'],
        ['two segments', () => `${parts()[0]}.${parts()[1]}`, 'malformed'],
        ['alg none without a signature', () => `${b64url({ alg: 'none', typ: 'JWT' })}.${parts()[1]}.`, 'unsupported_algorithm'],
        [
          'alg none with the real signature kept',
          () => `${b64url({ alg: 'none', typ: 'JWT', kid: service.secrets.jwtKid })}.${parts()[1]}.${parts()[2]}`,
          'unsupported_algorithm',
        ],
        [
          'HS512 with the right key',
          () => signWith(service.secrets.jwtKey, claimsWith({}), { alg: 'HS512', typ: 'JWT', kid: service.secrets.jwtKid }),
          'unsupported_algorithm',
        ],
        [
          'a wrong key under the right kid',
          () => signWith(randomBytes(32), claimsWith({}), { alg: 'HS256', typ: 'JWT', kid: service.secrets.jwtKid }),
          'bad_signature',
        ],
        ['a wrong key and no kid', () => signWith(randomBytes(32), claimsWith({}), { alg: 'HS256', typ: 'JWT' }), 'bad_signature'],
        [
          'a tampered tier claim',
          () => `${parts()[0]}.${b64url(claimsWith({ tier: 'svc_pay_wallet_fund' }))}.${parts()[2]}`,
          'bad_signature',
        ],
        [
          'a tampered sub claim',
          () => `${parts()[0]}.${b64url(claimsWith({ sub: 'mallory@example.com' }))}.${parts()[2]}`,
          'bad_signature',
        ],
        [
          'an unknown kid',
          () => signWith(service.secrets.jwtKey, claimsWith({}), { alg: 'HS256', typ: 'JWT', kid: 'rotated-away' }),
          'unknown_key',
        ],
        [
          'the right key but no chainId',
          () => {
            const { chainId: _chainId, ...rest } = claimsWith({});
            return signWith(service.secrets.jwtKey, rest, { alg: 'HS256', typ: 'JWT' });
          },
          'invalid_claims',
        ],
        [
          'the right key but an unknown tier',
          () => signWith(service.secrets.jwtKey, claimsWith({ tier: 'platinum' }), { alg: 'HS256' }),
          'invalid_claims',
        ],
        ['a trailing "=" after the signature (a second spelling of a valid token)', () => `${token}=`, 'malformed'],
        ['padding inside the payload segment', () => `${parts()[0]}.${parts()[1]}==.${parts()[2]}`, 'malformed'],
        [
          'the right key but iat an hour in the future',
          () => signWith(service.secrets.jwtKey, claimsWith({ iat: Math.floor(clock.now() / 1000) + 3600 }), { alg: 'HS256' }),
          'invalid_claims',
        ],
        [
          // A sign-in after the token's issue, or before 1970: no token of ours says so (a time this far out was
          // answered 500 where a route turned it into a date).
          'the right key but an auth_time after its iat',
          () => signWith(service.secrets.jwtKey, claimsWith({ auth_time: 1e15 }), { alg: 'HS256' }),
          'invalid_claims',
        ],
        // Looked up by its jti, which PostgreSQL's text cannot hold with U+0000 in it (that answered 500).
        [
          'the right key but a jti that is no UUID',
          () => signWith(service.secrets.jwtKey, claimsWith({ jti: 'a\u0000b' }), { alg: 'HS256' }),
          'invalid_claims',
        ],
        [
          'the right key but a negative auth_time',
          () => signWith(service.secrets.jwtKey, claimsWith({ auth_time: -1 }), { alg: 'HS256' }),
          'invalid_claims',
        ],
        [
          'the right key but a life longer than 30 days',
          () =>
            signWith(service.secrets.jwtKey, claimsWith({ exp: (decodeJwt(token).iat as number) + THIRTY_DAYS_SECONDS + 1 }), {
              alg: 'HS256',
            }),
          'invalid_claims',
        ],
        [
          'the right key but no iat',
          () => {
            const { iat: _iat, ...rest } = claimsWith({});
            return signWith(service.secrets.jwtKey, rest, { alg: 'HS256' });
          },
          'invalid_claims',
        ],
        [
          'the right key but expired',
          () => signWith(service.secrets.jwtKey, claimsWith({ exp: Math.floor(clock.now() / 1000) - 1 }), { alg: 'HS256' }),
          'expired',
        ],
      ];

      it.each(cases)('%s', async (_label, build, reason) => {
        const bad = await build();
        const response = await verifyInBody(bad);
        expect(response.status).toBe(200);
        expect(response.body.valid).toBe(false);
        expect(REASONS).toContain(response.body.reason);
        if (reason !== undefined) expect(response.body.reason).toBe(reason);
        expect(response.body).not.toHaveProperty('tier_key');
        expect(response.body).not.toHaveProperty('docs_sections');
        // The same token as the bearer credential gets the same answer.
        expect((await api.post('/v1/auth/verify', undefined, { token: bad })).body).toEqual(response.body);
      });
    });

    it('accepts an iat a few seconds ahead of its clock (clock skew between hosts) in a recorded token; refuses one without jti', async () => {
      const now = Math.floor(clock.now() / 1000);
      const claims = decodeJwt(token);
      const skewed = await new SignJWT({ ...claims, iat: now + 30, exp: now + 3600 })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(service.secrets.jwtKey);
      expect((await verifyInBody(skewed)).body).toMatchObject({ valid: true, sub: email });
      const { jti: _jti, ...withoutJti } = claims;
      const anonymous = await new SignJWT({ ...withoutJti, iat: now, exp: now + 3600 })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(service.secrets.jwtKey);
      expect((await verifyInBody(anonymous)).body).toEqual({ valid: false, reason: 'unknown_token' });
    });

    it('refuses to spend with a token spelled with a trailing "=" (401 at execute, nothing charged)', async () => {
      const response = await api.post(
        '/v1/swarm/execute',
        { user_id: email, agent_id: 'agent_ops_monitor_004' },
        {
          token: `${token}=`,
          headers: { 'idempotency-key': `pad-${randomBytes(4).toString('hex')}` },
        },
      );
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthorized');
    });

    it('reports the issued token expired once 30 days have passed, though it was verified (and remembered) before', async () => {
      expect((await verifyInBody(token)).body.valid).toBe(true);
      clock.advance(THIRTY_DAYS_SECONDS * 1000 + 1000);
      try {
        expect((await verifyInBody(token)).body).toEqual({ valid: false, reason: 'expired' });
      } finally {
        clock.advance(-(THIRTY_DAYS_SECONDS * 1000 + 1000));
      }
      expect((await verifyInBody(token)).body.valid).toBe(true);
    });
  });
});

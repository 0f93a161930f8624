import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { testEngine } from '../helpers/test-engine.js';
import { MovableClock } from '../helpers/clock.js';
import { confirmPayment, createPayment, payAndConfirm } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';
import {
  UUID_V4,
  confirmAtProviderOnly,
  confirmedEvent,
  dbSnapshot,
  deliverWebhook,
  paymentData,
  rowCount,
} from './support/paygate-support.js';

const HOUR_MS = 60 * 60 * 1000;

describe('pay gate: session and activation', () => {
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

  async function newSession(email: string, tier_id = 'svc_starter_agents'): Promise<string> {
    const response = await api.post('/v1/swarm/paygate/session', { tier_id, user_id: email });
    expect(response.status, response.text).toBe(201);
    return response.body.session_id as string;
  }
  // Activation needs the session user's JWT from a recent sign-in (docs/api.md "activate").
  const activate = (session_id: string, payment_id: string, token: string) =>
    api.post('/v1/swarm/paygate/activate', { session_id, payment_id }, { token });
  const tokenOf = async (email: string): Promise<string> => (await mintToken(service, email.toLowerCase())).token;
  const enroll = (token: string) => api.post('/v1/swarm/nodes/enroll', undefined, { token });

  it('creates a pending session for 24 hours with a UUID v4 and the lowercased e-mail', async () => {
    const before = clock.now();
    const response = await api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: 'Mixed.Case@Example.COM' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      session_id: expect.stringMatching(UUID_V4),
      tier_id: 'svc_starter_agents',
      user_id: 'mixed.case@example.com',
      status: 'pending',
      expires_at: expect.any(String),
    });
    const expiresAt = Date.parse(response.body.expires_at);
    expect(expiresAt - before).toBeGreaterThanOrEqual(24 * HOUR_MS - 1000);
    expect(expiresAt - before).toBeLessThanOrEqual(24 * HOUR_MS + 5000);
  });

  it('activates with a confirmed payment: deploy token, install path, bare metal; only the token hash is stored', async () => {
    const email = uniqueEmail('activate');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const before = clock.now();
    const response = await activate(sessionId, paymentId, token);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      session_id: sessionId,
      status: 'active',
      deploy_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      deploy_token_expires_at: expect.any(String),
      install_path: '/opt/svc/swarm-node',
      deploy_mode: 'bare_metal',
    });
    const lifetime = Date.parse(response.body.deploy_token_expires_at) - before;
    expect(lifetime).toBeGreaterThanOrEqual(15 * 60 * 1000 - 1000);
    expect(lifetime).toBeLessThanOrEqual(15 * 60 * 1000 + 5000);

    const deployToken: string = response.body.deploy_token;
    const stored = service.db.prepare('SELECT token_hash FROM deploy_tokens WHERE session_id = ?').all(sessionId);
    expect(stored).toEqual([{ token_hash: createHash('sha256').update(deployToken).digest('hex') }]);
    // On SQLite, nor anywhere in the file or its log (PostgreSQL's files belong to its server, not to this test).
    if (testEngine() === 'sqlite') {
      service.db.pragma('wal_checkpoint(FULL)');
      const files = [service.db.name, `${service.db.name}-wal`].map((path) => {
        try {
          return readFileSync(path).toString('latin1');
        } catch {
          return '';
        }
      });
      for (const bytes of files) expect(bytes.includes(deployToken)).toBe(false);
    }
    const session = service.db.prepare('SELECT status, payment_id FROM sessions WHERE session_id = ?').get(sessionId);
    expect(session).toEqual({ status: 'active', payment_id: paymentId });
  });

  it('answers 409 payment_not_confirmed with Retry-After before the confirmation, then activates once it comes', async () => {
    const email = uniqueEmail('early');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const early = await activate(sessionId, paymentId, token);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('payment_not_confirmed');
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(service.db.prepare('SELECT status FROM sessions WHERE session_id = ?').get(sessionId)).toEqual({ status: 'pending' });

    await confirmPayment(service.baseUrl, paymentId);
    expect((await activate(sessionId, paymentId, token)).status).toBe(200);
  });

  it('asks the provider when the webhook was lost, records its word and activates', async () => {
    const email = uniqueEmail('lost');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    confirmAtProviderOnly(service.db, paymentId);
    expect(service.db.prepare('SELECT * FROM payments WHERE payment_id = ?').get(paymentId)).toBeUndefined();

    const response = await activate(sessionId, paymentId, token);
    expect(response.status, response.text).toBe(200);
    expect(service.db.prepare('SELECT status, customer_email, offer_id FROM payments WHERE payment_id = ?').get(paymentId)).toEqual({
      status: 'CONFIRMED',
      customer_email: email,
      offer_id: 'svc_starter_agents',
    });
  });

  it('credits a lost wallet-fund payment found at activation once, even when its webhook arrives later', async () => {
    const email = uniqueEmail('lostfund');
    const token = await tokenOf(email);
    const sessionId = await newSession(email, 'svc_pay_wallet_fund');
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', email, 1234);
    confirmAtProviderOnly(service.db, paymentId);

    const response = await activate(sessionId, paymentId, token);
    // The wallet-fund tier has no node install, but the money is the user's all the same.
    expect(response.status).toBe(403);
    expect(response.body.code).toBe('forbidden');
    expect(await service.ctx.ledger.balance(email)).toBe(1234);

    await confirmPayment(service.baseUrl, paymentId);
    expect(await service.ctx.ledger.balance(email)).toBe(1234);
    expect(rowCount(service.db, 'webhook_events')).toBeGreaterThan(0);
  });

  it('answers 404 session_not_found for an unknown session and for a pending one older than 24 hours', async () => {
    const email = uniqueEmail('expiry');
    const token = await tokenOf(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const unknown = await activate('3f1c1a52-93a4-4c1e-9a8e-2f9b0c7d6e5f', paymentId, token);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('session_not_found');
    expect(unknown.body.remedy).toMatch(/same user_id as the checkout e-mail/);

    const sessionId = await newSession(email);
    clock.advance(24 * HOUR_MS + 1000);
    try {
      const fresh = await tokenOf(email);
      const before = dbSnapshot(service.db);
      const expired = await activate(sessionId, paymentId, fresh);
      expect(expired.status).toBe(404);
      expect(expired.body.code).toBe('session_not_found');
      expect(dbSnapshot(service.db)).toEqual(before);
    } finally {
      clock.advance(-(24 * HOUR_MS + 1000));
    }
  });

  it('gives the deploy token once: activating an active session again is 409, past 24 hours too, and its token still enrolls', async () => {
    const email = uniqueEmail('longlived');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const first = await activate(sessionId, paymentId, token);
    expect(first.status).toBe(200);
    const again = await activate(sessionId, paymentId, token);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'session_already_active', remedy: expect.stringMatching(/swarm-node enroll|deploy-token/) });
    expect(again.body.deploy_token).toBeUndefined();
    clock.advance(25 * HOUR_MS);
    try {
      const later = await activate(sessionId, paymentId, await tokenOf(email));
      expect(later.status).toBe(409);
    } finally {
      clock.advance(-25 * HOUR_MS);
    }
    expect((await enroll(first.body.deploy_token)).status).toBe(200);
  });

  it('answers 404 payment_not_found when neither the service nor the provider knows the payment', async () => {
    const email = uniqueEmail('nopay');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, 'pay_doesnotexist', token);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('payment_not_found');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it("answers 404 session_not_found when the payment's e-mail is not the session's user (spec §7)", async () => {
    const owner = uniqueEmail('owner');
    const token = await tokenOf(owner);
    const sessionId = await newSession(owner);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', uniqueEmail('stranger'));
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, paymentId, token);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('session_not_found');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('matches the e-mail without regard to case', async () => {
    const email = uniqueEmail('case');
    const token = await tokenOf(email);
    const sessionId = await newSession(email.toUpperCase());
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(sessionId.toUpperCase(), paymentId, token)).status).toBe(200);
  });

  it('answers 422 payment_mismatch for a payment of another tier or another merchant', async () => {
    const email = uniqueEmail('mismatch');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const otherTier = await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    let before = dbSnapshot(service.db);
    const tierResponse = await activate(sessionId, otherTier, token);
    expect(tierResponse.status).toBe(422);
    expect(tierResponse.body.code).toBe('payment_mismatch');
    expect(dbSnapshot(service.db)).toEqual(before);

    const foreign = paymentData({ customer_email: email, merchant_id: 'merchant_elsewhere' });
    expect((await deliverWebhook(service, confirmedEvent(foreign))).status).toBe(200);
    before = dbSnapshot(service.db);
    const merchantResponse = await activate(sessionId, foreign.payment_id, token);
    expect(merchantResponse.status).toBe(422);
    expect(merchantResponse.body.code).toBe('payment_mismatch');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('answers 403 forbidden for a wallet-fund payment, a top-up that installs no node', async () => {
    const email = uniqueEmail('walletfund');
    const token = await tokenOf(email);
    const sessionId = await newSession(email, 'svc_pay_wallet_fund');
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, paymentId, token);
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ code: 'forbidden', detail: expect.stringMatching(/installs no node/) });
    expect(response.body.remedy).toMatch(/svc_starter_agents/);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('answers 409 payment_already_used when a payment activated another session', async () => {
    const email = uniqueEmail('twice');
    const token = await tokenOf(email);
    const first = await newSession(email);
    const second = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(first, paymentId, token)).status).toBe(200);
    const before = dbSnapshot(service.db);
    const response = await activate(second, paymentId, token);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('payment_already_used');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it("never mints a deploy token from ids alone: session and payment ids without the user's JWT are 401, after the enrolment too", async () => {
    const email = uniqueEmail('again');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const before = dbSnapshot(service.db);
    const bare = await api.post('/v1/swarm/paygate/activate', { session_id: sessionId, payment_id: paymentId });
    expect(bare.status).toBe(401);
    expect(bare.body.code).toBe('unauthorized');
    expect(dbSnapshot(service.db)).toEqual(before);
    const first = await activate(sessionId, paymentId, token);
    expect((await enroll(first.body.deploy_token)).status).toBe(200);
    const tokens = rowCount(service.db, 'deploy_tokens');
    for (const bearer of [undefined, token]) {
      const replay = await api.post(
        '/v1/swarm/paygate/activate',
        { session_id: sessionId, payment_id: paymentId },
        bearer === undefined ? {} : { token: bearer },
      );
      expect(replay.status).toBe(bearer === undefined ? 401 : 409);
      expect(replay.body.deploy_token).toBeUndefined();
    }
    expect(rowCount(service.db, 'deploy_tokens')).toBe(tokens);
  });

  it("a stranger who paid in the victim's name cannot activate the victim's session: another user's JWT is 404, and nothing changes", async () => {
    const victim = uniqueEmail('victim');
    const sessionId = await newSession(victim);
    // The attacker pays for the victim's tier naming the victim's address, and signs in as themselves.
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', victim);
    const attacker = await tokenOf(uniqueEmail('attacker'));
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, paymentId, attacker);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('session_not_found');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('needs a sign-in within 15 minutes: an older JWT of the user is 401 step_up_required (RFC 9470), and nothing changes', async () => {
    const email = uniqueEmail('stale');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    clock.advance(15 * 60 * 1000 + 1000);
    try {
      const before = dbSnapshot(service.db);
      const response = await activate(sessionId, paymentId, token);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({
        code: 'step_up_required',
        max_age: 900,
        remedy: expect.stringContaining(`swarm-node login --email ${email}`),
      });
      expect(response.headers.get('www-authenticate')).toMatch(/error="insufficient_user_authentication".*max_age=900/);
      expect(dbSnapshot(service.db)).toEqual(before);
      expect((await activate(sessionId, paymentId, await tokenOf(email))).status).toBe(200);
    } finally {
      clock.advance(-(15 * 60 * 1000 + 1000));
    }
  });

  it('re-activation with another payment is 409 session_already_active', async () => {
    const email = uniqueEmail('other');
    const token = await tokenOf(email);
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const otherPayment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(sessionId, paymentId, token)).status).toBe(200);
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, otherPayment, token);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('session_already_active');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  describe('under concurrency', () => {
    it('two activations of one session with one payment: one gets the deploy token, the other 409, and it enrolls once', async () => {
      const email = uniqueEmail('race');
      const token = await tokenOf(email);
      const sessionId = await newSession(email);
      const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      const responses = await Promise.all([activate(sessionId, paymentId, token), activate(sessionId, paymentId, token)]);
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409]);
      const enrolls = await Promise.all(responses.filter((r) => r.status === 200).map((r) => enroll(r.body.deploy_token)));
      expect(enrolls.map((r) => r.status)).toEqual([200]);
      expect(
        service.db.prepare('SELECT count(*) AS n FROM deploy_tokens WHERE session_id = ? AND revoked_at IS NULL').get(sessionId),
      ).toEqual({ n: 1 });
    });

    it('one session raced with two payments: exactly one activates it', async () => {
      const email = uniqueEmail('race2');
      const token = await tokenOf(email);
      const sessionId = await newSession(email);
      const payments = [
        await payAndConfirm(service.baseUrl, 'svc_starter_agents', email),
        await payAndConfirm(service.baseUrl, 'svc_starter_agents', email),
      ];
      const responses = await Promise.all(payments.map((p) => activate(sessionId, p, token)));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(responses.find((r) => r.status === 409)!.body.code).toBe('session_already_active');
    });

    it.each([
      ['confirmed by webhook', false],
      // Known only to the provider: every activation awaits the provider lookup before its transaction.
      ['known only to the provider', true],
    ])('one payment (%s) raced into five sessions: exactly one session is activated', async (_label, lost) => {
      const email = uniqueEmail('race3');
      const token = await tokenOf(email);
      const sessions = await Promise.all([1, 2, 3, 4, 5].map(() => newSession(email)));
      let paymentId: string;
      if (lost) {
        paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
        confirmAtProviderOnly(service.db, paymentId);
      } else {
        paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      }
      const responses = await Promise.all(sessions.map((s) => activate(s, paymentId, token)));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      for (const r of responses.filter((r) => r.status === 409)) expect(r.body.code).toBe('payment_already_used');
      expect(service.db.prepare('SELECT count(*) AS n FROM sessions WHERE payment_id = ?').get(paymentId)).toEqual({ n: 1 });
      expect(service.db.prepare("SELECT count(*) AS n FROM payments WHERE payment_id = ? AND status = 'CONFIRMED'").get(paymentId)).toEqual(
        { n: 1 },
      );
    });
  });
});

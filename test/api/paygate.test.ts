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
import { UUID_V4, confirmAtProviderOnly, confirmedEvent, dbSnapshot, deliverWebhook, paymentData, rowCount } from './support/paygate-support.js';

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
  const activate = (session_id: string, payment_id: string) => api.post('/v1/swarm/paygate/activate', { session_id, payment_id });
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
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const before = clock.now();
    const response = await activate(sessionId, paymentId);
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

    const token: string = response.body.deploy_token;
    const stored = service.db.prepare('SELECT token_hash FROM deploy_tokens WHERE session_id = ?').all(sessionId);
    expect(stored).toEqual([{ token_hash: createHash('sha256').update(token).digest('hex') }]);
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
      for (const bytes of files) expect(bytes.includes(token)).toBe(false);
    }
    const session = service.db.prepare('SELECT status, payment_id FROM sessions WHERE session_id = ?').get(sessionId);
    expect(session).toEqual({ status: 'active', payment_id: paymentId });
  });

  it('answers 409 payment_not_confirmed with Retry-After before the confirmation, then activates once it comes', async () => {
    const email = uniqueEmail('early');
    const sessionId = await newSession(email);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    const early = await activate(sessionId, paymentId);
    expect(early.status).toBe(409);
    expect(early.body.code).toBe('payment_not_confirmed');
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(service.db.prepare('SELECT status FROM sessions WHERE session_id = ?').get(sessionId)).toEqual({ status: 'pending' });

    await confirmPayment(service.baseUrl, paymentId);
    expect((await activate(sessionId, paymentId)).status).toBe(200);
  });

  it('asks the provider when the webhook was lost, records its word and activates', async () => {
    const email = uniqueEmail('lost');
    const sessionId = await newSession(email);
    const paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
    confirmAtProviderOnly(service.db, paymentId);
    expect(service.db.prepare('SELECT * FROM payments WHERE payment_id = ?').get(paymentId)).toBeUndefined();

    const response = await activate(sessionId, paymentId);
    expect(response.status, response.text).toBe(200);
    expect(service.db.prepare('SELECT status, customer_email, offer_id FROM payments WHERE payment_id = ?').get(paymentId)).toEqual({
      status: 'CONFIRMED',
      customer_email: email,
      offer_id: 'svc_starter_agents',
    });
  });

  it('credits a lost wallet-fund payment found at activation once, even when its webhook arrives later', async () => {
    const email = uniqueEmail('lostfund');
    const sessionId = await newSession(email, 'svc_pay_wallet_fund');
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', email, 1234);
    confirmAtProviderOnly(service.db, paymentId);

    const response = await activate(sessionId, paymentId);
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
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const unknown = await activate('3f1c1a52-93a4-4c1e-9a8e-2f9b0c7d6e5f', paymentId);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('session_not_found');
    expect(unknown.body.remedy).toMatch(/same user_id as the checkout e-mail/);

    const sessionId = await newSession(email);
    clock.advance(24 * HOUR_MS + 1000);
    try {
      const before = dbSnapshot(service.db);
      const expired = await activate(sessionId, paymentId);
      expect(expired.status).toBe(404);
      expect(expired.body.code).toBe('session_not_found');
      expect(dbSnapshot(service.db)).toEqual(before);
    } finally {
      clock.advance(-(24 * HOUR_MS + 1000));
    }
  });

  it('keeps an active session past 24 hours: re-activation still works', async () => {
    const email = uniqueEmail('longlived');
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(sessionId, paymentId)).status).toBe(200);
    clock.advance(25 * HOUR_MS);
    try {
      expect((await activate(sessionId, paymentId)).status).toBe(200);
    } finally {
      clock.advance(-25 * HOUR_MS);
    }
  });

  it('answers 404 payment_not_found when neither the service nor the provider knows the payment', async () => {
    const sessionId = await newSession(uniqueEmail('nopay'));
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, 'pay_doesnotexist');
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('payment_not_found');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it("answers 404 session_not_found when the payment's e-mail is not the session's user (spec §7)", async () => {
    const sessionId = await newSession(uniqueEmail('owner'));
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', uniqueEmail('stranger'));
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, paymentId);
    expect(response.status).toBe(404);
    expect(response.body.code).toBe('session_not_found');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('matches the e-mail without regard to case', async () => {
    const email = uniqueEmail('case');
    const sessionId = await newSession(email.toUpperCase());
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(sessionId.toUpperCase(), paymentId)).status).toBe(200);
  });

  it('answers 422 payment_mismatch for a payment of another tier or another merchant', async () => {
    const email = uniqueEmail('mismatch');
    const sessionId = await newSession(email);
    const otherTier = await payAndConfirm(service.baseUrl, 'dev_portal_execution_billing', email);
    let before = dbSnapshot(service.db);
    const tierResponse = await activate(sessionId, otherTier);
    expect(tierResponse.status).toBe(422);
    expect(tierResponse.body.code).toBe('payment_mismatch');
    expect(dbSnapshot(service.db)).toEqual(before);

    const foreign = paymentData({ customer_email: email, merchant_id: 'merchant_elsewhere' });
    expect((await deliverWebhook(service, confirmedEvent(foreign))).status).toBe(200);
    before = dbSnapshot(service.db);
    const merchantResponse = await activate(sessionId, foreign.payment_id);
    expect(merchantResponse.status).toBe(422);
    expect(merchantResponse.body.code).toBe('payment_mismatch');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('answers 403 forbidden for a wallet-fund payment, a top-up that installs no node', async () => {
    const email = uniqueEmail('walletfund');
    const sessionId = await newSession(email, 'svc_pay_wallet_fund');
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email);
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, paymentId);
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ code: 'forbidden', detail: expect.stringMatching(/installs no node/) });
    expect(response.body.remedy).toMatch(/svc_starter_agents/);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('answers 409 payment_already_used when a payment activated another session', async () => {
    const email = uniqueEmail('twice');
    const first = await newSession(email);
    const second = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(first, paymentId)).status).toBe(200);
    const before = dbSnapshot(service.db);
    const response = await activate(second, paymentId);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('payment_already_used');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it('re-activation with the same payment issues a fresh deploy token and kills the unused old one', async () => {
    const email = uniqueEmail('again');
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const first = await activate(sessionId, paymentId);
    const second = await activate(sessionId, paymentId);
    expect(second.status).toBe(200);
    expect(second.body.deploy_token).not.toBe(first.body.deploy_token);
    expect((await enroll(first.body.deploy_token)).status).toBe(401);
    expect((await enroll(second.body.deploy_token)).status).toBe(200);
  });

  it('re-activation with another payment is 409 session_already_active', async () => {
    const email = uniqueEmail('other');
    const sessionId = await newSession(email);
    const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    const otherPayment = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
    expect((await activate(sessionId, paymentId)).status).toBe(200);
    const before = dbSnapshot(service.db);
    const response = await activate(sessionId, otherPayment);
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('session_already_active');
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  describe('under concurrency', () => {
    it('two activations of one session with one payment: both answer, exactly one deploy token enrolls', async () => {
      const email = uniqueEmail('race');
      const sessionId = await newSession(email);
      const paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      const responses = await Promise.all([activate(sessionId, paymentId), activate(sessionId, paymentId)]);
      expect(responses.map((r) => r.status)).toEqual([200, 200]);
      const enrolls = await Promise.all(responses.map((r) => enroll(r.body.deploy_token)));
      expect(enrolls.map((r) => r.status).sort()).toEqual([200, 401]);
      expect(service.db.prepare('SELECT count(*) AS n FROM deploy_tokens WHERE session_id = ? AND revoked_at IS NULL').get(sessionId)).toEqual({ n: 1 });
    });

    it('one session raced with two payments: exactly one activates it', async () => {
      const email = uniqueEmail('race2');
      const sessionId = await newSession(email);
      const payments = [
        await payAndConfirm(service.baseUrl, 'svc_starter_agents', email),
        await payAndConfirm(service.baseUrl, 'svc_starter_agents', email),
      ];
      const responses = await Promise.all(payments.map((p) => activate(sessionId, p)));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(responses.find((r) => r.status === 409)!.body.code).toBe('session_already_active');
    });

    it.each([
      ['confirmed by webhook', false],
      // Known only to the provider: every activation awaits the provider lookup before its transaction.
      ['known only to the provider', true],
    ])('one payment (%s) raced into five sessions: exactly one session is activated', async (_label, lost) => {
      const email = uniqueEmail('race3');
      const sessions = await Promise.all([1, 2, 3, 4, 5].map(() => newSession(email)));
      let paymentId: string;
      if (lost) {
        paymentId = await createPayment(service.baseUrl, 'svc_starter_agents', email);
        confirmAtProviderOnly(service.db, paymentId);
      } else {
        paymentId = await payAndConfirm(service.baseUrl, 'svc_starter_agents', email);
      }
      const responses = await Promise.all(sessions.map((s) => activate(s, paymentId)));
      expect(responses.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
      for (const r of responses.filter((r) => r.status === 409)) expect(r.body.code).toBe('payment_already_used');
      expect(service.db.prepare('SELECT count(*) AS n FROM sessions WHERE payment_id = ?').get(paymentId)).toEqual({ n: 1 });
      expect(service.db.prepare("SELECT count(*) AS n FROM payments WHERE payment_id = ? AND status = 'CONFIRMED'").get(paymentId)).toEqual({ n: 1 });
    });
  });
});

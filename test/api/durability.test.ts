// The built svc-api binary as its own process (run `npm run build` first): state survives SIGTERM and a restart on
// the same data directory, and an info-level log of a whole funnel carries no secret.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { activatedSession, fundWallet, mailedCode, payAndConfirm, signIn, signInPaid } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { spawnSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir, uniqueEmail } from '../helpers/temp.js';
import { deliverWebhookSigned } from './support/paygate-support.js';

describe('svc-api binary: durability across SIGTERM and restart, and logs without secrets', () => {
  afterAll(() => removeTempDirs());

  it('keeps sessions, deploy tokens, wallet balances and JWTs across a restart; logs no secret', async () => {
    const dataDir = tempDir('svc-api-durable-');
    const first = await spawnSvcApi({ dataDir, env: { SVC_LOG_LEVEL: 'info' } });
    let log = '';
    first.process.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    first.process.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const api = apiClient(first.baseUrl);

    const email = uniqueEmail('durable');
    const { session_id, payment_id, deploy_token } = await activatedSession(first.baseUrl, email);
    const jwt = await signIn(first.baseUrl, email, 'svc_starter_agents');
    // A sign-in code that was mailed, and a token signed out before the restart: neither may come back.
    const mailed = await mailedCode(first.baseUrl, email);
    const signedOut = await signInPaid(first.baseUrl, email, 'svc_starter_agents');
    expect((await api.post('/v1/auth/logout', undefined, { token: signedOut })).status).toBe(200);
    await fundWallet(first.baseUrl, email, 2500);
    const verified = await api.post('/v1/auth/verify', { token: jwt }, { token: jwt });
    expect(verified.body).toMatchObject({ valid: true, sub: email });
    expect((await api.get('/v1/swarm/wallet', jwt)).body.balance_cents).toBe(2500);
    // Secrets in the places a careless log would catch them: a query string, bearer headers, a rejected
    // token, a webhook body and signature.
    await httpRequest(`${first.baseUrl}/wallet/login?token=${jwt}&intent=swarm_private_access`);
    await httpRequest(`${first.baseUrl}/v1/swarm/nodes/enroll?token=${deploy_token}`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong' },
    });
    await api.post('/v1/auth/verify', { token: `${jwt}x` });
    const secrets = {
      jwtSecret: readFileSync(join(dataDir, 'jwt-secret'), 'utf8').trim(),
      webhookSecret: readFileSync(join(dataDir, 'webhook-secret'), 'utf8').trim(),
    };
    const webhook = await deliverWebhookSigned(first.baseUrl, secrets.webhookSecret, email);
    expect(webhook.response.status).toBe(200);
    // Unused before the restart: it must still work after it.
    const spareSession = await activatedSession(first.baseUrl, email);

    first.process.kill('SIGTERM');
    const exited = await first.process;
    expect(exited.exitCode).toBe(0);

    // The log is real (so this test can fail) and holds none of the secrets in any usual encoding.
    expect(log).toMatch(/"route":"\/v1\/swarm\/paygate\/activate"/);
    expect(log).toMatch(/"route":"\/v1\/payments\/webhook"/);
    const jwtKeyBytes = Buffer.from(secrets.jwtSecret, 'base64url');
    const forbidden: Record<string, string> = {
      jwt,
      'JWT signature': jwt.split('.')[2]!,
      'deploy token': deploy_token,
      'spare deploy token': spareSession.deploy_token,
      'JWT key (as stored)': secrets.jwtSecret,
      'JWT key (hex)': jwtKeyBytes.toString('hex'),
      'JWT key (base64)': jwtKeyBytes.toString('base64'),
      'webhook secret': secrets.webhookSecret,
      'webhook signature': webhook.signature.split('v1=')[1]!,
      'webhook body': webhook.body,
      'sign-in code': mailed.code,
      'sign-in code (digits)': mailed.code.replace('-', ''),
    };
    for (const [what, value] of Object.entries(forbidden)) {
      expect(value.length, what).toBeGreaterThanOrEqual(8);
      expect(log.includes(value), `${what} appears in the log`).toBe(false);
    }
    expect(log).not.toMatch(/eyJ[\w-]+\.eyJ/);

    const second = await spawnSvcApi({ dataDir });
    try {
      const again = apiClient(second.baseUrl);
      expect((await again.post('/v1/auth/verify', { token: jwt })).body).toMatchObject({
        valid: true,
        sub: email,
        tier_key: 'svc_starter_agents',
      });
      expect((await again.get('/v1/swarm/wallet', jwt)).body.balance_cents).toBe(2500);
      expect((await again.post('/v1/auth/verify', { token: signedOut })).body).toEqual({ valid: false, reason: 'revoked' });
      expect((await again.get('/v1/swarm/wallet', signedOut)).status).toBe(401);

      const enrolled = await httpRequest(`${second.baseUrl}/v1/swarm/nodes/enroll`, { method: 'POST', token: spareSession.deploy_token });
      expect(enrolled.status, enrolled.text).toBe(200);
      expect(enrolled.body.user_id).toBe(email);

      // The session is still active: activating it again, with its payment or another, gives no second token.
      const fresh = await signInPaid(second.baseUrl, email, 'svc_starter_agents');
      const otherPayment = await payAndConfirm(second.baseUrl, 'svc_starter_agents', email);
      for (const payment of [otherPayment, payment_id]) {
        const refused = await again.post('/v1/swarm/paygate/activate', { session_id, payment_id: payment }, { token: fresh });
        expect(refused.status).toBe(409);
        expect(refused.body.code).toBe('session_already_active');
      }
      // A code mailed before the restart and not used yet still signs in after it: it is kept (hashed) in the database.
      const reused = await again.post('/v1/auth/issue-token', {
        status: 'CONFIRMED',
        offer_id: 'svc_starter_agents',
        customer_email: email,
        merchant_id: 'merchant_local',
        ...mailed,
      });
      expect(reused.status).toBe(201);

      const db = new Database(join(dataDir, 'svc-api.db'), { readonly: true });
      try {
        expect(db.prepare('SELECT status, payment_id FROM sessions WHERE session_id = ?').get(session_id)).toEqual({
          status: 'active',
          payment_id,
        });
        expect(db.prepare("SELECT count(*) AS n FROM ledger_entries WHERE user_id = ? AND kind = 'credit'").get(email)).toEqual({ n: 1 });
      } finally {
        db.close();
      }
    } finally {
      await second.stop();
    }
    expect(second.process.exitCode).toBe(0);
  });
});

// issue-token for an enrolled node (docs/api.md "issue-token: proof of payment"): enrollment with the deploy token
// proved the payment, so the node's credential stands for it; nothing else a stranger could know does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import type { TestService } from '../helpers/svc-api.js';
import { MERCHANT_ID, activatedSession, signIn } from '../helpers/funnel.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { dbSnapshot } from './support/paygate-support.js';

describe('issue-token with a node credential', () => {
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

  async function enrolledNode(): Promise<{ email: string; credential: string; paymentId: string }> {
    const email = uniqueEmail('node');
    const { deploy_token, payment_id } = await activatedSession(service.baseUrl, email);
    const enrolled = await api.post('/v1/swarm/nodes/enroll', undefined, { token: deploy_token });
    expect(enrolled.status, enrolled.text).toBe(200);
    return { email, credential: enrolled.body.node_credential, paymentId: payment_id };
  }

  const body = (email: string, offer_id = 'svc_starter_agents') => ({ status: 'CONFIRMED', offer_id, customer_email: email, merchant_id: MERCHANT_ID });

  it('issues the node user\'s JWT without a payment id, recorded against the payment that activated its session', async () => {
    const { email, credential, paymentId } = await enrolledNode();
    const response = await api.post('/v1/auth/issue-token', body(email.toUpperCase()), { token: credential });
    expect(response.status, response.text).toBe(201);
    const claims = decodeJwt(response.body.jwtToken);
    expect(claims).toMatchObject({ sub: email, tier: 'svc_starter_agents' });
    expect(service.db.prepare('SELECT payment_id FROM issued_tokens WHERE jti = ?').get(claims.jti)).toEqual({ payment_id: paymentId });
    expect(response.text).not.toContain(credential);
  });

  it('signs in only the node\'s own user and offer (403), and never with an unknown credential or a JWT (401)', async () => {
    const { email, credential } = await enrolledNode();
    const other = uniqueEmail('other');
    const jwt = await signIn(service.baseUrl, other);
    const before = dbSnapshot(service.db);
    const otherUser = await api.post('/v1/auth/issue-token', body(other), { token: credential });
    expect(otherUser.status).toBe(403);
    expect(otherUser.body.code).toBe('forbidden');
    const otherOffer = await api.post('/v1/auth/issue-token', body(email, 'dev_portal_execution_billing'), { token: credential });
    expect(otherOffer.status).toBe(403);
    const forged = `svcn_${'A'.repeat(43)}`;
    for (const bearer of [forged, `${credential}x`, jwt]) {
      const refused = await api.post('/v1/auth/issue-token', body(email), { token: bearer });
      expect(refused.status, bearer.slice(0, 8)).toBe(401);
      expect(refused.body.code).toBe('unauthorized');
      expect(refused.text).not.toContain(bearer);
    }
    expect(dbSnapshot(service.db)).toEqual(before);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { CHAIN_ID, NODE_ACCESS } from '../../src/contract/claims.js';
import type { TestService } from '../helpers/svc-api.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { nodeFor } from '../helpers/protocol-node.js';
import { execute, paidUser } from './execute-fixtures.js';

describe('GET /v1/swarm/wallet', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi();
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it("shows the signed-in user's balance in cents on chain 1202", async () => {
    const user = await paidUser(service, 250);
    const response = await apiClient(service.baseUrl).get('/v1/swarm/wallet', user.token);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ user_id: user.email, balance_cents: 250, currency: 'USD', chain_id: CHAIN_ID });
  });

  it('shows 0 for a user who never funded the wallet', async () => {
    const user = await paidUser(service, 0);
    const response = await apiClient(service.baseUrl).get('/v1/swarm/wallet', user.token);
    expect(response.body).toEqual({ user_id: user.email, balance_cents: 0, currency: 'USD', chain_id: CHAIN_ID });
  });

  it('shows each user only their own wallet', async () => {
    const alice = await paidUser(service, 10);
    const bob = await paidUser(service, 99);
    const api = apiClient(service.baseUrl);
    expect((await api.get('/v1/swarm/wallet', alice.token)).body.balance_cents).toBe(10);
    expect((await api.get('/v1/swarm/wallet', bob.token)).body.balance_cents).toBe(99);
  });

  it('refuses a missing, forged or malformed token with 401', async () => {
    const user = await paidUser(service, 10);
    const forged = await new SignJWT({ tier: 'svc_starter_agents', chainId: CHAIN_ID, nodeAccess: NODE_ACCESS })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: service.secrets.jwtKid })
      .setSubject(user.email)
      .setIssuer('svc')
      .setIssuedAt()
      .setExpirationTime('30d')
      .setJti(randomUUID())
      .sign(new Uint8Array(randomBytes(32)));
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${forged}` },
      { authorization: 'Bearer' },
      { authorization: `Token ${user.token}` },
    ];
    for (const headers of attempts) {
      const response = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.body).toMatchObject({ code: 'unauthorized' });
      expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    }
  });

  it('follows the paid funnel end to end: sign in, fund, execute, the wallet shows what is left', async () => {
    const email = uniqueEmail('funnel');
    const token = await signIn(service.baseUrl, email);
    const api = apiClient(service.baseUrl);
    expect((await api.get('/v1/swarm/wallet', token)).body.balance_cents).toBe(0);
    await fundWallet(service.baseUrl, email, 30);
    expect((await api.get('/v1/swarm/wallet', token)).body.balance_cents).toBe(30);
    const node = await nodeFor(service.baseUrl, email, ['agent_research_rag_015']);
    const run = await execute(service, token, {
      user_id: email,
      agent_id: 'agent_research_rag_015',
      input: { corpus: '/srv/docs', question: 'Where are the backups?' },
    });
    await node.stop();
    expect(run.status, run.text).toBe(200);
    expect(run.body).toMatchObject({ status: 'succeeded', charged_cents: 15, balance_cents: 15 });
    expect((await api.get('/v1/swarm/wallet', token)).body).toEqual({
      user_id: email,
      balance_cents: 15,
      currency: 'USD',
      chain_id: CHAIN_ID,
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningService } from '../../src/api/server.js';
import { apiClient } from '../helpers/http.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { rowCount } from './support/paygate-support.js';

const LIMIT = 5;

describe('rate limit on the auth, paygate and enroll endpoints', () => {
  let service: RunningService;
  let api: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    service = await startSvcApi({ rateLimitPerMinute: LIMIT });
    api = apiClient(service.baseUrl);
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it(`answers the ${LIMIT + 1}th session request in a minute with 429 rate_limited and Retry-After, creating nothing`, async () => {
    const body = { tier_id: 'svc_starter_agents', user_id: 'busy@example.com' };
    for (let i = 0; i < LIMIT; i += 1) expect((await api.post('/v1/swarm/paygate/session', body)).status).toBe(201);
    const sessions = rowCount(service.db, 'sessions');
    const limited = await api.post('/v1/swarm/paygate/session', body);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(limited.body).toMatchObject({ status: 429, code: 'rate_limited', type: 'urn:svc:problem:rate_limited' });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(rowCount(service.db, 'sessions')).toBe(sessions);
  });

  it.each([
    ['/v1/swarm/paygate/activate', { session_id: '3f1c1a52-93a4-4c1e-9a8e-2f9b0c7d6e5f', payment_id: 'pay_x' }],
    ['/v1/auth/issue-token', { status: 'CONFIRMED', offer_id: 'svc_starter_agents', customer_email: 'a@example.com', merchant_id: 'merchant_local' }],
    ['/v1/auth/verify', { token: 'a.b.c' }],
    ['/v1/swarm/nodes/enroll', undefined],
  ])('limits %s too, even when the requests fail', async (path, body) => {
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i += 1) statuses.push((await api.post(path, body)).status);
    expect(statuses.slice(0, LIMIT)).not.toContain(429);
    expect(statuses[LIMIT]).toBe(429);
  });

  it('does not limit the catalog, execute or the payment webhook', async () => {
    for (let i = 0; i < LIMIT * 3; i += 1) {
      expect((await api.get('/v1/swarm/agents')).status).toBe(200);
      expect((await api.post('/v1/swarm/execute', { user_id: 'a@example.com', agent_id: 'agent_ops_monitor_004' })).status).not.toBe(429);
      expect((await api.post('/v1/payments/webhook', { id: 'evt_1', type: 'x', created: 1, data: {} })).status).toBe(401);
    }
  });
});

// docs/api.md "Rate limit": one budget per client address, shared by the auth, paygate, enroll and wallet sign-in
// endpoints, counted in clock-aligned one-minute windows, announced in the IETF RateLimit headers. The service runs
// on a stopped clock 15 s into a minute, so every window below is fresh, whole and its reset exactly 45 s away.
import { execa } from 'execa';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RATE_LIMIT_WINDOW_MS, createMemoryRateLimitStore, decide, windowStartOf } from '../../src/api/http/rate-limit.js';
import type { TestService } from '../helpers/svc-api.js';
import { StoppedClock } from '../helpers/clock.js';
import { apiClient, httpRequest, type ApiResponse } from '../helpers/http.js';
import { SVC_API_BIN, spawnSvcApi, startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { rowCount } from './support/paygate-support.js';

const LIMIT = 5;
const INTO_WINDOW_MS = 15_000;
const RESET_SECONDS = 45;
const SESSION_BODY = { tier_id: 'svc_starter_agents', user_id: 'busy@example.com' };

function stoppedClockInWindow(): StoppedClock {
  return new StoppedClock(windowStartOf(Date.now()) + INTO_WINDOW_MS);
}

describe('rate limit on the auth, paygate, enroll and wallet sign-in endpoints', () => {
  let service: TestService;
  let api: ReturnType<typeof apiClient>;
  const clock = stoppedClockInWindow();

  beforeAll(async () => {
    service = await startSvcApi({ rateLimitPerMinute: LIMIT, clock });
    api = apiClient(service.baseUrl);
  });
  // Each test starts in a window of its own, at the same offset into it.
  beforeEach(() => clock.advance(RATE_LIMIT_WINDOW_MS));
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it(`answers the ${LIMIT + 1}th session request in a minute with 429 rate_limited and Retry-After, creating nothing`, async () => {
    for (let i = 0; i < LIMIT; i += 1) expect((await api.post('/v1/swarm/paygate/session', SESSION_BODY)).status).toBe(201);
    const sessions = rowCount(service.db, 'sessions');
    const limited = await api.post('/v1/swarm/paygate/session', SESSION_BODY);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(limited.body).toMatchObject({ status: 429, code: 'rate_limited', type: 'urn:svc:problem:rate_limited' });
    expect(limited.headers.get('retry-after')).toBe(String(RESET_SECONDS));
    expect(rowCount(service.db, 'sessions')).toBe(sessions);
  });

  it.each([
    ['/v1/swarm/paygate/activate', { session_id: '3f1c1a52-93a4-4c1e-9a8e-2f9b0c7d6e5f', payment_id: 'pay_x' }],
    [
      '/v1/auth/issue-token',
      { status: 'CONFIRMED', offer_id: 'svc_starter_agents', customer_email: 'a@example.com', merchant_id: 'merchant_local' },
    ],
    ['/v1/auth/verify', { token: 'a.b.c' }],
    ['/v1/swarm/nodes/enroll', undefined],
  ])('limits %s too, even when the requests fail', async (path, body) => {
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i += 1) statuses.push((await api.post(path, body)).status);
    expect(statuses.slice(0, LIMIT)).not.toContain(429);
    expect(statuses[LIMIT]).toBe(429);
  });

  it('shares one budget across the endpoints: spent on verify, it refuses the session, enroll and the wallet sign-in', async () => {
    for (let i = 0; i < LIMIT; i += 1) expect((await api.post('/v1/auth/verify', { token: 'a.b.c' })).status).toBe(200);
    const sessions = rowCount(service.db, 'sessions');
    const session = await api.post('/v1/swarm/paygate/session', SESSION_BODY);
    expect(session.status).toBe(429);
    expect(session.body).toMatchObject({ code: 'rate_limited' });
    expect(rowCount(service.db, 'sessions')).toBe(sessions);
    expect((await api.post('/v1/swarm/nodes/enroll')).status).toBe(429);
    const walletLogin = await httpRequest(`${service.walletUrl}/login`);
    expect(walletLogin.status).toBe(429);
    expect(walletLogin.headers.get('content-type')).toBe('text/html; charset=utf-8');
  });

  it('announces the policy and what is left on every response of a limited endpoint, refusals and failures included', async () => {
    const expectHeaders = (response: ApiResponse, remaining: number) => {
      expect(response.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=60`);
      expect(response.headers.get('ratelimit')).toBe(`"default";r=${remaining};t=${RESET_SECONDS}`);
    };
    expectHeaders(await api.post('/v1/swarm/paygate/session', SESSION_BODY), LIMIT - 1);
    // A request refused for its body still spent one.
    const invalid = await api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents' });
    expect(invalid.status).toBe(400);
    expectHeaders(invalid, LIMIT - 2);
    expectHeaders(await api.post('/v1/auth/verify', { token: 'a.b.c' }), LIMIT - 3);
    expectHeaders(await httpRequest(`${service.walletUrl}/login`), LIMIT - 4);
    expectHeaders(await api.post('/v1/swarm/nodes/enroll'), 0);
    const refused = await api.post('/v1/swarm/paygate/session', SESSION_BODY);
    expect(refused.status).toBe(429);
    expectHeaders(refused, 0);
    expect(refused.headers.get('retry-after')).toBe(String(RESET_SECONDS));
    const refusedPage = await httpRequest(`${service.walletUrl}/login`);
    expect(refusedPage.status).toBe(429);
    expectHeaders(refusedPage, 0);
    expect(refusedPage.headers.get('retry-after')).toBe(String(RESET_SECONDS));

    // Endpoints outside the budget say nothing about it.
    const catalog = await api.get('/v1/swarm/agents');
    expect(catalog.headers.get('ratelimit')).toBeNull();
    expect(catalog.headers.get('ratelimit-policy')).toBeNull();
  });

  it('gives the whole budget back when the next minute starts', async () => {
    for (let i = 0; i < LIMIT; i += 1) await api.post('/v1/auth/verify', { token: 'a.b.c' });
    expect((await api.post('/v1/auth/verify', { token: 'a.b.c' })).status).toBe(429);
    // 44 s later the window is still the same one.
    clock.advance((RESET_SECONDS - 1) * 1000);
    const late = await api.post('/v1/auth/verify', { token: 'a.b.c' });
    expect(late.status).toBe(429);
    expect(late.headers.get('retry-after')).toBe('1');
    clock.advance(1000);
    const next = await api.post('/v1/auth/verify', { token: 'a.b.c' });
    expect(next.status).toBe(200);
    expect(next.headers.get('ratelimit')).toBe(`"default";r=${LIMIT - 1};t=60`);
  });

  it('does not limit the catalog, execute or the payment webhook', async () => {
    for (let i = 0; i < LIMIT * 3; i += 1) {
      expect((await api.get('/v1/swarm/agents')).status).toBe(200);
      expect((await api.post('/v1/swarm/execute', { user_id: 'a@example.com', agent_id: 'agent_ops_monitor_004' })).status).not.toBe(429);
      expect((await api.post('/v1/payments/webhook', { id: 'evt_1', type: 'x', created: 1, data: {} })).status).toBe(401);
    }
  });
});

describe('rate limit behind a proxy (svc-api --trust-proxy)', () => {
  afterAll(() => removeTempDirs());

  async function statusesFrom(service: TestService, forwardedFor: string[]): Promise<number[]> {
    const statuses: number[] = [];
    for (const address of forwardedFor) {
      const response = await apiClient(service.baseUrl).post(
        '/v1/auth/verify',
        { token: 'a.b.c' },
        { headers: { 'x-forwarded-for': address } },
      );
      statuses.push(response.status);
    }
    return statuses;
  }

  it('gives each X-Forwarded-For client its own budget when the proxy is trusted', async () => {
    const service = await startSvcApi({ rateLimitPerMinute: 2, clock: stoppedClockInWindow(), trustProxy: ['127.0.0.1'] });
    try {
      expect(await statusesFrom(service, ['203.0.113.1', '203.0.113.1', '203.0.113.1'])).toEqual([200, 200, 429]);
      expect(await statusesFrom(service, ['203.0.113.2', '203.0.113.2'])).toEqual([200, 200]);
    } finally {
      await service.close();
    }
  });

  it('ignores X-Forwarded-For by default: every client behind one peer shares its budget', async () => {
    const service = await startSvcApi({ rateLimitPerMinute: 2, clock: stoppedClockInWindow() });
    try {
      expect(await statusesFrom(service, ['203.0.113.1', '203.0.113.2', '203.0.113.3'])).toEqual([200, 200, 429]);
    } finally {
      await service.close();
    }
  });
});

// The built binary (npm run build first): the flag reaches the service, and bad values are usage errors.
describe('svc-api --trust-proxy', () => {
  afterAll(() => removeTempDirs());

  it('is documented in --help', async () => {
    const result = await execa('node', [SVC_API_BIN, '--help'], { reject: false });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/--trust-proxy <list>/);
  });

  it.each([
    ['1', 'not a hop count'],
    ['10.0.0.300', '"10.0.0.300" is not an IP address'],
    ['127.0.0.1,10.0.0.0/33', '"10.0.0.0/33" is not an IP address, a CIDR range'],
  ])('refuses --trust-proxy %s as a usage error (exit 2)', async (value, message) => {
    const result = await execa('node', [SVC_API_BIN, '--data-dir', '/nonexistent/never-created', '--trust-proxy', value], {
      reject: false,
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
  });

  it('takes the client address from X-Forwarded-For when the peer is a named proxy', async () => {
    const service = await spawnSvcApi({ args: ['--rate-limit', '1', '--trust-proxy', '127.0.0.1, ::1'] });
    try {
      // One request each from two clients behind the proxy: a shared budget of 1 would refuse the second.
      const api = apiClient(service.baseUrl);
      for (const client of ['203.0.113.1', '203.0.113.2']) {
        const response = await api.post('/v1/auth/verify', { token: 'a.b.c' }, { headers: { 'x-forwarded-for': client } });
        expect(response.status).toBe(200);
      }
    } finally {
      await service.stop();
    }
  });
});

describe('rate-limit windows and their store', () => {
  it('allows up to the limit, then refuses; resets at the next clock-aligned minute, never "in 0 s"', () => {
    const start = windowStartOf(1_700_000_123_456);
    expect(start % RATE_LIMIT_WINDOW_MS).toBe(0);
    expect(decide(3, 3, start, start)).toEqual({ allowed: true, remaining: 0, resetSeconds: 60 });
    expect(decide(4, 3, start + 59_999, start)).toEqual({ allowed: false, remaining: 0, resetSeconds: 1 });
    expect(decide(1, 3, start + 30_500, start)).toEqual({ allowed: true, remaining: 2, resetSeconds: 30 });
  });

  it('counts per key and window, and forgets past windows once a new one starts', () => {
    const store = createMemoryRateLimitStore();
    const first = windowStartOf(Date.now());
    for (let i = 0; i < 1000; i += 1) store.hit(`198.51.100.${i}`, first);
    expect(store.hit('198.51.100.7', first)).toBe(2);
    expect(store.size()).toBe(1000);
    const second = first + RATE_LIMIT_WINDOW_MS;
    expect(store.hit('198.51.100.7', second)).toBe(1);
    expect(store.size()).toBe(1);
  });
});

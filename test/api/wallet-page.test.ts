// The wallet page over plain HTTP (the browser test drives it in Chromium): token exchange, cookie, headers, the
// signed-in view, funding through the sandbox provider, and every bad input answered with a clear page.
import { randomUUID } from 'node:crypto';
import { request as httpGet } from 'node:http';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { MovableClock, StoppedClock } from '../helpers/clock.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { apiClient, httpRequest, type ApiResponse } from '../helpers/http.js';
import { nodeFor } from '../helpers/protocol-node.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { mintToken } from '../helpers/tokens.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

describe('wallet page', () => {
  let service: TestService;
  let clock: MovableClock;
  let origin: string;

  beforeAll(async () => {
    clock = new MovableClock();
    service = await startSvcApi({ clock });
    origin = service.baseUrl;
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  const loginUrl = (token?: string) => walletLoginUrl(service.walletUrl, token);
  const sessionCount = () => (service.db.prepare('SELECT count(*) AS n FROM wallet_sessions').get() as { n: number }).n;
  const sandboxPaymentCount = () => (service.db.prepare('SELECT count(*) AS n FROM sandbox_payments').get() as { n: number }).n;
  const balanceOf = (email: string) => service.ctx.ledger.balance(email);

  /** Opens the sign-in link and returns the session cookie ("svc_wallet=…") the browser would keep. */
  async function signInToWallet(token: string): Promise<{ cookie: string; response: ApiResponse }> {
    const response = await httpRequest(loginUrl(token));
    expect(response.status, response.text).toBe(303);
    const setCookie = response.headers.get('set-cookie') ?? '';
    const cookie = /^(svc_wallet=[^;]+)/.exec(setCookie)?.[1];
    expect(cookie, setCookie).toBeDefined();
    return { cookie: cookie!, response };
  }

  const page = (cookie?: string, headers: Record<string, string> = {}) =>
    httpRequest(loginUrl(), { headers: { ...headers, ...(cookie === undefined ? {} : { cookie }) } });

  const postForm = (path: string, form: string, cookie: string | undefined, headers: Record<string, string> = { origin, 'sec-fetch-site': 'same-origin' }) =>
    httpRequest(`${service.walletUrl}/${path}`, {
      method: 'POST',
      rawBody: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers, ...(cookie === undefined ? {} : { cookie }) },
    });

  function expectWalletHeaders(response: ApiResponse): void {
    // A redirect has no body, so no content type.
    if (response.status !== 303) expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("base-uri 'none'");
    expect(csp).not.toContain('unsafe');
  }

  describe('signing in', () => {
    it('opened bare without a cookie, says how to sign in, with the headers and an accessible page', async () => {
      const response = await page();
      expect(response.status).toBe(200);
      expectWalletHeaders(response);
      expect(response.text).toContain('<html lang="en">');
      expect(response.text).toContain('name="viewport"');
      expect(response.text).toContain('Sign in to your wallet');
      expect(response.text).toContain('swarm-node wallet login');
      expect(response.headers.get('set-cookie')).toBeNull();
    });

    it('exchanges the JWT for an HttpOnly SameSite=Strict session cookie and redirects to the bare page', async () => {
      const email = uniqueEmail('wallet');
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const { cookie, response } = await signInToWallet(token);
      expectWalletHeaders(response);
      expect(response.headers.get('location')).toBe('login');
      const setCookie = response.headers.get('set-cookie')!;
      expect(setCookie).toMatch(/; HttpOnly/);
      expect(setCookie).toMatch(/; SameSite=Strict/);
      expect(setCookie).toMatch(/; Path=\/wallet(;|$)/);
      expect(setCookie).not.toMatch(/Secure/); // plain http on loopback
      const maxAge = Number(/Max-Age=(\d+)/.exec(setCookie)?.[1]);
      expect(maxAge).toBeGreaterThan(12 * 3600 - 60);
      expect(maxAge).toBeLessThanOrEqual(12 * 3600);
      const value = cookie.slice('svc_wallet='.length);
      expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(token).not.toContain(value);
      // Only the hash is stored, and never the JWT.
      const rows = service.db.prepare('SELECT * FROM wallet_sessions WHERE user_id = ?').all(email) as Array<Record<string, unknown>>;
      expect(rows).toHaveLength(1);
      expect(JSON.stringify(rows)).not.toContain(value);
      expect(JSON.stringify(rows)).not.toContain(token);

      const signedIn = await page(cookie);
      expect(signedIn.status).toBe(200);
      expectWalletHeaders(signedIn);
      expect(signedIn.text).toContain(email);
      expect(signedIn.text).toMatch(/data-testid="balance">\$0\.00</);
      expect(signedIn.text).toMatch(/data-testid="chain">1202</);
      expect(signedIn.text).toContain('No runs yet');
      expect(signedIn.text).toContain('Fund wallet (sandbox)');
    });

    it('accepts a link without intent, as typed by hand', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_pay_wallet_fund');
      const response = await httpRequest(`${service.walletUrl}/login?token=${encodeURIComponent(token)}`);
      expect(response.status).toBe(303);
      expect(response.headers.get('set-cookie')).toMatch(/^svc_wallet=/);
    });

    it('ends the session no later than the JWT', async () => {
      const issuedAt = clock.now();
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      clock.advance(30 * DAY_MS - HOUR_MS); // one hour of the JWT's 30 days left
      try {
        const { response } = await signInToWallet(token);
        const maxAge = Number(/Max-Age=(\d+)/.exec(response.headers.get('set-cookie')!)?.[1]);
        expect(maxAge).toBeLessThanOrEqual(3600);
        expect(maxAge).toBeGreaterThan(3500);
        expect(clock.now() - issuedAt).toBeGreaterThan(29 * DAY_MS);
      } finally {
        clock.advance(-(30 * DAY_MS - HOUR_MS));
      }
    });

    it('shows the sign-in page again once the session has expired, and drops the cookie', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const { cookie } = await signInToWallet(token);
      clock.advance(12 * HOUR_MS + 1000);
      try {
        const response = await page(cookie);
        expect(response.status).toBe(200);
        expect(response.text).toContain('Your wallet session has ended');
        expect(response.headers.get('set-cookie')).toMatch(/^svc_wallet=;.*Max-Age=0|Expires=Thu, 01 Jan 1970/);
      } finally {
        clock.advance(-(12 * HOUR_MS + 1000));
      }
    });

    it('signing in again replaces the session this browser had', async () => {
      const firstEmail = uniqueEmail('first');
      const first = await mintToken(service, firstEmail, 'svc_starter_agents');
      const second = await mintToken(service, uniqueEmail('second'), 'svc_starter_agents');
      const { cookie: firstCookie } = await signInToWallet(first.token);
      const response = await httpRequest(loginUrl(second.token), { headers: { cookie: firstCookie } });
      expect(response.status).toBe(303);
      expect((await page(firstCookie)).text).not.toContain(firstEmail);
    });

    it('refuses a token signed with the key but never issued (no recorded jti): a 401 page, no session, no cookie', async () => {
      const email = uniqueEmail('nojti');
      const now = Math.floor(clock.now() / 1000);
      const token = await new SignJWT({ tier: 'svc_starter_agents', chainId: 1202, nodeAccess: 'isolated_svc_server' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(email)
        .setIssuer('svc')
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(service.secrets.jwtKey);
      const verdict = await httpRequest(`${service.baseUrl}/v1/auth/verify`, { body: { token } });
      expect(verdict.body).toEqual({ valid: false, reason: 'unknown_token' });
      const response = await httpRequest(loginUrl(token));
      expect(response.status).toBe(401);
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(response.text).not.toContain(email);
    });

    it('refuses a form whose bytes or percent-escapes are not UTF-8 with 400, and changes nothing', async () => {
      const { token } = await mintToken(service, uniqueEmail('utf8'), 'svc_starter_agents');
      const { cookie } = await signInToWallet(token);
      const before = sandboxPaymentCount();
      for (const rawBody of [Buffer.from([0x61, 0x6d, 0x6f, 0x75, 0x6e, 0x74, 0x3d, 0x31, 0xff]), 'amount=1%FF']) {
        const response = await httpRequest(`${loginUrl().replace(/login$/, 'fund')}`, {
          method: 'POST',
          rawBody,
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin },
        });
        expect(response.status).toBe(400);
        expectWalletHeaders(response);
        // Refused for its encoding, not read as a malformed amount ("1\uFFFD").
        expect(response.text).toContain('UTF-8');
      }
      expect(sandboxPaymentCount()).toBe(before);
    });

    it('escapes every value it shows', async () => {
      // The most HTML-laden address a token may carry (ASCII atext: ' & / = ? { } | are allowed, < > " are not).
      const email = `x'&{y}/=?@example.com`;
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const { cookie } = await signInToWallet(token);
      const response = await page(cookie);
      expect(response.text).not.toContain(email);
      expect(response.text).toContain('x&#39;&amp;{y}/=?@example.com');
    });
  });

  describe('bad sign-in links: a clear page, no session, no redirect', () => {
    async function expectRefused(url: string, status: number, text: RegExp): Promise<void> {
      const before = sessionCount();
      const response = await httpRequest(url);
      expect(response.status, response.text).toBe(status);
      expectWalletHeaders(response);
      expect(response.headers.get('location')).toBeNull();
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(response.text).toMatch(text);
      expect(response.text).toContain('swarm-node wallet login');
      expect(sessionCount()).toBe(before);
    }

    it('an expired token', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      clock.advance(30 * DAY_MS + 1000);
      try {
        await expectRefused(loginUrl(token), 401, /has expired/);
      } finally {
        clock.advance(-(30 * DAY_MS + 1000));
      }
    });

    it('a tampered, a foreign-key, an alg:none and a garbage token', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const [header, payload, signature] = token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'victim@example.com' })).toString('base64url')}.${signature}`;
      const foreignKey = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode('x'.repeat(32)));
      const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
      for (const bad of [tampered, foreignKey, none, 'not-a-jwt']) {
        await expectRefused(loginUrl(bad), 401, /not valid/);
      }
    });

    it('another intent, a repeated token, an empty or oversized token', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const base = `${service.walletUrl}/login`;
      await expectRefused(`${base}?token=${token}&intent=transfer_funds`, 400, /intent must be swarm_private_access/);
      await expectRefused(`${base}?token=${token}&token=${token}&intent=swarm_private_access`, 400, /damaged/);
      await expectRefused(`${base}?token=&intent=swarm_private_access`, 400, /damaged/);
      await expectRefused(`${base}?token=${'a'.repeat(9000)}`, 400, /damaged/);
    });

    it('an unknown wallet path is an HTML 404 with the same headers; the API keeps problem+json', async () => {
      const response = await httpRequest(`${service.walletUrl}/nothing-here`);
      expect(response.status).toBe(404);
      expectWalletHeaders(response);
      expect(response.text).toContain('Page not found');
      const api = await apiClient(service.baseUrl).get('/v1/nothing-here');
      expect(api.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    });

    it('the wallet root redirects to the login page', async () => {
      for (const url of [service.walletUrl, `${service.walletUrl}/`, `${service.walletUrl}/?from=docs`, `${service.walletUrl}?from=docs`]) {
        const response = await httpRequest(url);
        expect(response.status, url).toBe(303);
        expect(new URL(response.headers.get('location')!, url).pathname, url).toBe('/wallet/login');
      }
    });
  });

  describe('signed in', () => {
    it('shows the balance in dollars and the recent runs with their charges, newest first', async () => {
      const email = uniqueEmail('runs');
      const token = await signIn(service.baseUrl, email);
      await fundWallet(service.baseUrl, email, 100);
      const node = await nodeFor(service.baseUrl, email, ['agent_ops_monitor_004', 'agent_dev_review_012']);
      for (const agent_id of ['agent_ops_monitor_004', 'agent_dev_review_012']) {
        const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
          body: { user_id: email, agent_id, input: CONTRACT_INPUTS[agent_id] },
          token,
          headers: { 'idempotency-key': randomUUID() },
        });
        expect(run.status, run.text).toBe(200);
      }
      const { cookie } = await signInToWallet(token);
      const response = await page(cookie);
      expect(response.text).toMatch(/data-testid="balance">\$0\.84</);
      const rows = [...response.text.matchAll(/<tr>\s*<td><a href="runs\/[0-9a-f-]{36}">([^<]+)<\/a><br>[\s\S]*?<td[^>]*>(\w+)<\/td>\s*<td class="num"[^>]*>([^<]+)<\/td>/g)].map((m) => [m[1], m[2], m[3]]);
      expect(rows).toEqual([
        ['Dev review the service', 'succeeded', '$0.12'],
        ['Ops monitor agent', 'succeeded', '$0.04'],
      ]);
      await node.stop();
    });
  });

  describe('sign-out', () => {
    it('ends the session on the server and clears the cookie', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const { cookie } = await signInToWallet(token);
      const before = sessionCount();
      const response = await postForm('logout', '', cookie);
      expect(response.status).toBe(303);
      expect(response.headers.get('location')).toBe('login');
      expect(response.headers.get('set-cookie')).toMatch(/^svc_wallet=;/);
      expect(sessionCount()).toBe(before - 1);
      expect((await page(cookie)).text).toContain('Your wallet session has ended');
    });

    it('refuses a post from another site and keeps the session', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const { cookie } = await signInToWallet(token);
      for (const headers of <Array<Record<string, string>>>[
        { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
        { origin: 'https://evil.example' },
        { origin: 'null', 'sec-fetch-site': 'cross-site' },
        { origin: 'null' },
        {},
      ]) {
        const response = await postForm('logout', '', cookie, headers);
        expect(response.status, JSON.stringify(headers)).toBe(403);
        expectWalletHeaders(response);
      }
      expect((await page(cookie)).text).toContain('Your wallet');
    });
  });

  describe('funding in sandbox mode', () => {
    async function signedInUser(): Promise<{ email: string; cookie: string }> {
      const email = uniqueEmail('fund');
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      return { email, cookie: (await signInToWallet(token)).cookie };
    }

    it('goes through the sandbox provider and its webhook, then shows the new balance', async () => {
      const { email, cookie } = await signedInUser();
      // What Chromium sends from the page itself: Origin null (the page is no-referrer), Sec-Fetch-Site same-origin.
      const response = await postForm('fund', 'amount=5.25', cookie, { origin: 'null', 'sec-fetch-site': 'same-origin' });
      expect(response.status, response.text).toBe(303);
      expect(response.headers.get('location')).toBe('login');
      expect(await balanceOf(email)).toBe(525);
      const payment = service.db.prepare("SELECT * FROM payments WHERE customer_email = ? AND offer_id = 'svc_pay_wallet_fund'").get(email) as Record<string, unknown>;
      expect(payment).toMatchObject({ status: 'CONFIRMED', offer_id: 'svc_pay_wallet_fund', amount_cents: 525 });
      expect((await page(cookie)).text).toMatch(/data-testid="balance">\$5\.25</);
      // A browser without Fetch Metadata sends a real Origin instead.
      expect((await postForm('fund', 'amount=%241', cookie, { origin })).status).toBe(303);
      expect(await balanceOf(email)).toBe(625);
    });

    it('refuses bad amounts with the form shown again, and changes nothing', async () => {
      const { email, cookie } = await signedInUser();
      const payments = sandboxPaymentCount();
      for (const form of ['amount=abc', 'amount=0', 'amount=-1', 'amount=1.234', 'amount=1000.01', 'amount=', '', 'other=1', 'amount=1&amount=2', `amount=${'9'.repeat(40)}`]) {
        const response = await postForm('fund', form, cookie);
        expect(response.status, form).toBe(400);
        expectWalletHeaders(response);
        expect(response.text, form).toContain('role="alert"');
        expect(response.text, form).toContain('aria-invalid="true"');
      }
      const escaped = await postForm('fund', `amount=${encodeURIComponent('"><b>1')}`, cookie);
      expect(escaped.text).toContain('value="&quot;&gt;&lt;b&gt;1"');
      expect(await balanceOf(email)).toBe(0);
      expect(sandboxPaymentCount()).toBe(payments);
    });

    it('refuses a cross-site post, no session, JSON and an oversized form, and changes nothing', async () => {
      const { email, cookie } = await signedInUser();
      const payments = sandboxPaymentCount();
      expect((await postForm('fund', 'amount=5', cookie, { origin: 'https://evil.example' })).status).toBe(403);
      expect((await postForm('fund', 'amount=5', cookie, { origin: 'null', 'sec-fetch-site': 'same-site' })).status).toBe(403);
      const unsigned = await postForm('fund', 'amount=5', undefined);
      expect(unsigned.status).toBe(401);
      expect(unsigned.text).toContain('swarm-node wallet login');
      expect((await postForm('fund', 'amount=5', 'svc_wallet=forged-value')).status).toBe(401);
      const json = await httpRequest(`${service.walletUrl}/fund`, { body: { amount: '5' }, headers: { cookie, origin } });
      expect(json.status).toBe(415);
      expectWalletHeaders(json);
      expect((await postForm('fund', `amount=5&pad=${'x'.repeat(2048)}`, cookie)).status).toBe(413);
      expect(await balanceOf(email)).toBe(0);
      expect(sandboxPaymentCount()).toBe(payments);
    });
  });
});

describe('wallet page without the sandbox', () => {
  it('offers no funding form and no funding route', async () => {
    const service = await startSvcApi({ sandbox: false });
    try {
      const email = uniqueEmail();
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const exchange = await httpRequest(walletLoginUrl(service.walletUrl, token));
      const cookie = /^(svc_wallet=[^;]+)/.exec(exchange.headers.get('set-cookie') ?? '')![1]!;
      const signedIn = await httpRequest(walletLoginUrl(service.walletUrl), { headers: { cookie } });
      expect(signedIn.text).toContain(email);
      expect(signedIn.text).not.toContain('Fund wallet');
      const fund = await httpRequest(`${service.walletUrl}/fund`, {
        method: 'POST',
        rawBody: 'amount=5',
        headers: { cookie, origin: service.baseUrl, 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(fund.status).toBe(404);
      expect(await service.ctx.ledger.balance(email)).toBe(0);
    } finally {
      await service.close();
      removeTempDirs();
    }
  });
});

describe('wallet page behind an https wallet URL', () => {
  it('marks the cookie Secure and scopes it to the public path when the browser comes through it', async () => {
    const service = await startSvcApi({ env: { SVC_WALLET_URL: 'https://wallet.example.test/pay' } });
    try {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_starter_agents');
      const local = `${service.baseUrl}/wallet/login?token=${token}&intent=swarm_private_access`;
      // fetch will not send another Host; node:http does, as a reverse proxy would.
      const proxied = await getWithHost(local, 'wallet.example.test');
      expect(proxied.status).toBe(303);
      expect(proxied.setCookie).toMatch(/; Path=\/pay;/);
      expect(proxied.setCookie).toMatch(/; Secure/);
      const direct = await httpRequest(local);
      expect(direct.headers.get('set-cookie')).toMatch(/; Path=\/wallet(;|$)/);
      expect(direct.headers.get('set-cookie')).not.toMatch(/Secure/);
    } finally {
      await service.close();
      removeTempDirs();
    }
  });
});

function getWithHost(url: string, host: string): Promise<{ status: number; setCookie: string }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookie: String(res.headers['set-cookie'] ?? '') }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('wallet page rate limit', () => {
  it('answers sign-in floods from one address with an HTML 429 and Retry-After', async () => {
    // Stopped: the limit counts in clock-aligned minutes, and a minute starting mid-test would reset it.
    const service = await startSvcApi({ rateLimitPerMinute: 3, clock: new StoppedClock(Date.now()) });
    try {
      const statuses: number[] = [];
      let last: ApiResponse | undefined;
      for (let attempt = 0; attempt < 4; attempt += 1) {
        last = await httpRequest(walletLoginUrl(service.walletUrl, 'forged.token.value'));
        statuses.push(last.status);
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
      expect(last!.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(last!.headers.get('ratelimit')).toBe(`"default";r=0;t=${last!.headers.get('retry-after')}`);
      expect(last!.headers.get('referrer-policy')).toBe('no-referrer');
      expect(last!.text).toContain('Too many requests');
    } finally {
      await service.close();
      removeTempDirs();
    }
  });
});

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
/** What a browser sends with a link typed or pasted into its address bar (docs/api.md "Wallet page"). */
const TYPED = { 'sec-fetch-site': 'none' };
const EVIL = 'https://evil.example';

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

  /** Opens the sign-in link as typed and returns the session cookie ("svc_wallet=…") the browser would keep. */
  async function signInToWallet(token: string): Promise<{ cookie: string; response: ApiResponse }> {
    const response = await httpRequest(loginUrl(token), { headers: TYPED });
    expect(response.status, response.text).toBe(303);
    const setCookie = response.headers.get('set-cookie') ?? '';
    const cookie = /^(svc_wallet=[^;]+)/.exec(setCookie)?.[1];
    expect(cookie, setCookie).toBeDefined();
    return { cookie: cookie!, response };
  }

  const page = (cookie?: string, headers: Record<string, string> = {}) =>
    httpRequest(loginUrl(), { headers: { ...headers, ...(cookie === undefined ? {} : { cookie }) } });

  const postForm = (
    path: string,
    form: string,
    cookie: string | undefined,
    headers: Record<string, string> = { origin, 'sec-fetch-site': 'same-origin' },
  ) =>
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
      expect(signedIn.text).toMatch(/data-testid="chain">svc pay wallet, chain 1202 /);
      expect(signedIn.text).toContain('No runs yet');
      expect(signedIn.text).toContain('Fund wallet (sandbox)');
    });

    it('accepts a link without intent, as typed by hand', async () => {
      const { token } = await mintToken(service, uniqueEmail(), 'svc_pay_wallet_fund');
      const response = await httpRequest(`${service.walletUrl}/login?token=${encodeURIComponent(token)}`, { headers: TYPED });
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
      const response = await httpRequest(loginUrl(second.token), { headers: { ...TYPED, cookie: firstCookie } });
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

  describe('a sign-in link that was not typed: "Continue as", and a form only the wallet can send', () => {
    const sessionsOf = (email: string) =>
      (service.db.prepare('SELECT count(*) AS n FROM wallet_sessions WHERE user_id = ?').get(email) as { n: number }).n;
    const cookies = (...values: Array<string | undefined>) => values.filter((value) => value !== undefined).join('; ');
    const ours = () => ({ origin: 'null', 'sec-fetch-site': 'same-origin' });

    /** Follows the link as a browser does from a page (or without Fetch Metadata): the pre-session cookie it leaves. */
    async function openedFromPage(token: string, headers: Record<string, string> = {}, session?: string): Promise<string> {
      const response = await httpRequest(loginUrl(token), { headers: session === undefined ? headers : { ...headers, cookie: session } });
      expect(response.status, response.text).toBe(303);
      expectWalletHeaders(response);
      expect(response.headers.get('location')).toBe('sign-in');
      const setCookie = response.headers.getSetCookie();
      expect(setCookie).toHaveLength(1);
      expect(setCookie[0]).toMatch(/^svc_wallet_pending=[^;]+; Max-Age=(600|599); Path=\/wallet; HttpOnly; SameSite=Lax$/);
      expect(setCookie[0]).not.toContain(token);
      return setCookie[0]!.split(';')[0]!;
    }

    /** The "Continue as" page of a pre-session cookie, and the token of its form. */
    async function continuePageOf(pending: string, session?: string): Promise<{ response: ApiResponse; formToken: string }> {
      const response = await httpRequest(`${service.walletUrl}/sign-in`, { headers: { cookie: cookies(pending, session) } });
      expect(response.status, response.text).toBe(200);
      const formToken = /name="form_token" value="([A-Za-z0-9_-]+)"/.exec(response.text)?.[1];
      expect(formToken, response.text).toBeDefined();
      return { response, formToken: formToken! };
    }

    const postSignIn = (fields: Record<string, string>, cookie: string, headers: Record<string, string>) =>
      postForm('sign-in', new URLSearchParams(fields).toString(), cookie, headers);

    async function twoUsers(): Promise<{ victim: string; victimCookie: string; attacker: string; attackerToken: string }> {
      const victim = uniqueEmail('victim');
      const attacker = uniqueEmail('attacker');
      const { cookie: victimCookie } = await signInToWallet((await mintToken(service, victim, 'svc_starter_agents')).token);
      return { victim, victimCookie, attacker, attackerToken: (await mintToken(service, attacker, 'svc_starter_agents')).token };
    }

    it('followed from a page, or by a browser without Fetch Metadata, signs no one in and keeps the session', async () => {
      const { victim, victimCookie, attacker, attackerToken } = await twoUsers();
      for (const site of [undefined, 'cross-site', 'same-site', 'same-origin']) {
        const headers: Record<string, string> = site === undefined ? {} : { 'sec-fetch-site': site };
        const before = sessionCount();
        const pending = await openedFromPage(attackerToken, headers, victimCookie);
        expect(sessionCount(), JSON.stringify(headers)).toBe(before);
        expect(sessionsOf(attacker)).toBe(0);
        const signedIn = await page(victimCookie);
        expect(signedIn.text).toContain(`data-testid="email">${victim}<`);

        // With the session in view (a same-site arrival carries it), the page asks to switch; without it, to continue.
        const { response } = await continuePageOf(pending, victimCookie);
        expectWalletHeaders(response);
        expect(response.text).toContain(`<h1>Switch to ${attacker}?</h1>`);
        expect(response.text).toContain(`You are signed in as <strong>${victim}</strong>; switch to <strong>${attacker}</strong>?`);
        expect(response.text).not.toContain(attackerToken);
        const bare = await continuePageOf(pending);
        expect(bare.response.text).toContain(`<h1>Continue as ${attacker}?</h1>`);
        expect(bare.response.text).toContain(`>Continue as ${attacker}</button>`);
      }
    });

    it("refuses the form with a foreign Origin, another site's Fetch Metadata, or no token tied to the pre-session cookie", async () => {
      const { victim, victimCookie, attacker, attackerToken } = await twoUsers();
      const pending = await openedFromPage(attackerToken);
      const { formToken } = await continuePageOf(pending);
      const otherPending = await openedFromPage(attackerToken);
      const otherToken = (await continuePageOf(otherPending)).formToken;
      const otherPortOfHost = origin.replace(/:\d+$/, ':1');
      const refused: Array<[string, Record<string, string>, string, Record<string, string>]> = [
        ['a foreign Origin, with the token', { form_token: formToken }, pending, { origin: EVIL, 'sec-fetch-site': 'cross-site' }],
        ['a foreign Origin without Fetch Metadata', { form_token: formToken }, pending, { origin: EVIL }],
        ['the same host on another port', { form_token: formToken }, pending, { origin: otherPortOfHost, 'sec-fetch-site': 'same-site' }],
        ['same-site Fetch Metadata, Origin null', { form_token: formToken }, pending, { origin: 'null', 'sec-fetch-site': 'same-site' }],
        ['cross-site Fetch Metadata, no Origin', { form_token: formToken }, pending, { 'sec-fetch-site': 'cross-site' }],
        ['no token', {}, pending, ours()],
        ['a wrong token', { form_token: 'A'.repeat(43) }, pending, ours()],
        ['the token of another pre-session cookie', { form_token: otherToken }, pending, ours()],
        ['the token without its cookie', { form_token: formToken }, '', ours()],
        ['a forged cookie', { form_token: formToken }, `${pending.slice(0, -4)}AAAA`, ours()],
        ['no Origin, no Fetch Metadata, no token', {}, pending, {}],
      ];
      for (const [what, fields, pendingCookie, headers] of refused) {
        const response = await postSignIn(fields, cookies(pendingCookie || undefined, victimCookie), headers);
        expect(response.status, what).toBe(403);
        expectWalletHeaders(response);
        expect(response.headers.get('set-cookie'), what).toBeNull();
      }
      expect(sessionsOf(attacker)).toBe(0);
      expect((await page(victimCookie)).text).toContain(`data-testid="email">${victim}<`);
    });

    it('signs in by the form the page sent (Origin null, its token), or one whose Origin is the wallet', async () => {
      const email = uniqueEmail('continue');
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const pending = await openedFromPage(token);
      const { formToken } = await continuePageOf(pending);
      const response = await postSignIn({ form_token: formToken }, pending, ours());
      expect(response.status, response.text).toBe(303);
      expect(response.headers.get('location')).toBe('login');
      const setCookie = response.headers.getSetCookie();
      const session = setCookie.find((each) => each.startsWith('svc_wallet='))!;
      expect(session).toMatch(/; HttpOnly; SameSite=Strict/);
      expect(setCookie.find((each) => each.startsWith('svc_wallet_pending='))).toMatch(/^svc_wallet_pending=;/);
      expect((await page(session.split(';')[0])).text).toContain(`data-testid="email">${email}<`);

      // A browser without Fetch Metadata names the wallet in Origin: that is enough, with the cookie.
      const again = await openedFromPage(token);
      const byOrigin = await postSignIn({}, again, { origin });
      expect(byOrigin.status, byOrigin.text).toBe(303);
      expect(sessionsOf(email)).toBe(2);
    });

    it('switches from another account only when the page named it: else it asks again', async () => {
      const { victim, victimCookie, attacker, attackerToken } = await twoUsers();
      const pending = await openedFromPage(attackerToken, { 'sec-fetch-site': 'cross-site' });
      // Arrived from another site: the Strict session cookie was held back, so the page could not name the session.
      const { formToken } = await continuePageOf(pending);
      const asked = await postSignIn({ form_token: formToken }, cookies(pending, victimCookie), ours());
      expect(asked.status).toBe(200);
      expect(asked.text).toContain(`You are signed in as <strong>${victim}</strong>; switch to <strong>${attacker}</strong>?`);
      expect(asked.text).toContain(`name="replace" value="${victim}"`);
      expect(sessionsOf(attacker)).toBe(0);
      expect((await page(victimCookie)).text).toContain(`data-testid="email">${victim}<`);

      const switched = await postSignIn({ form_token: formToken, replace: victim }, cookies(pending, victimCookie), ours());
      expect(switched.status, switched.text).toBe(303);
      expect(sessionsOf(attacker)).toBe(1);
      expect((await page(victimCookie)).text).toContain('Your wallet session has ended');
    });

    it('waits ten minutes for its button, and not past a sign-out of its token', async () => {
      const email = uniqueEmail('waits');
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const pending = await openedFromPage(token);
      const { formToken } = await continuePageOf(pending);
      clock.advance(10 * 60 * 1000 + 1000);
      try {
        const late = await postSignIn({ form_token: formToken }, pending, ours());
        expect(late.status).toBe(400);
        expectWalletHeaders(late);
        expect(late.text).toContain('No sign-in is waiting in this browser');
        expect(late.headers.get('set-cookie')).toMatch(/^svc_wallet_pending=;/);
        expect((await httpRequest(`${service.walletUrl}/sign-in`, { headers: { cookie: pending } })).status).toBe(400);
      } finally {
        clock.advance(-(10 * 60 * 1000 + 1000));
      }
      const fresh = await openedFromPage(token);
      const freshToken = (await continuePageOf(fresh)).formToken;
      expect((await httpRequest(`${service.baseUrl}/v1/auth/logout`, { method: 'POST', token })).status).toBe(200);
      expect((await postSignIn({ form_token: freshToken }, fresh, ours())).status).toBe(400);
      expect(sessionsOf(email)).toBe(0);
      // No sign-in waiting at all: the page is the wallet's.
      const none = await httpRequest(`${service.walletUrl}/sign-in`);
      expect(none.status).toBe(303);
      expect(none.headers.get('location')).toBe('login');
    });

    it('escapes the address it names', async () => {
      const email = `x'&{y}/=?@example.com`;
      const { token } = await mintToken(service, email, 'svc_starter_agents');
      const { response } = await continuePageOf(await openedFromPage(token));
      expect(response.text).not.toContain(email);
      expect(response.text).toContain('Continue as x&#39;&amp;{y}/=?@example.com?');
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
      const foreignKey = await new SignJWT({ ...claims })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .sign(new TextEncoder().encode('x'.repeat(32)));
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
      const rows = [
        ...response.text.matchAll(
          /<tr>\s*<td><a href="runs\/[0-9a-f-]{36}">([^<]+)<\/a><br>[\s\S]*?<td[^>]*>(\w+)<\/td>\s*<td class="num"[^>]*>([^<]+)<\/td>/g,
        ),
      ].map((m) => [m[1], m[2], m[3]]);
      expect(rows).toEqual([
        ['Dev review the service', 'succeeded', '$0.12'],
        ['Ops monitor agent', 'succeeded', '$0.04'],
      ]);
      // The ledger's entries, newest first, each with the balance it left (the same on PostgreSQL: one statement).
      const history = /<table data-testid="transactions">[\s\S]*?<\/table>/.exec(response.text)?.[0] ?? '';
      const entries = [
        ...history.matchAll(
          /data-label="Kind">(\w+)<\/td>[\s\S]*?data-label="Amount">([^<]+)<\/td>\s*<td class="num" data-label="Balance">([^<]+)</g,
        ),
      ].map((m) => [m[1], m[2], m[3]]);
      expect(entries).toEqual([
        ['Charge', '−$0.12', '$0.84'],
        ['Charge', '−$0.04', '$0.96'],
        ['Funding', '+$1.00', '$1.00'],
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
      const payment = service.db
        .prepare("SELECT * FROM payments WHERE customer_email = ? AND offer_id = 'svc_pay_wallet_fund'")
        .get(email) as Record<string, unknown>;
      expect(payment).toMatchObject({ status: 'CONFIRMED', offer_id: 'svc_pay_wallet_fund', amount_cents: 525 });
      expect((await page(cookie)).text).toMatch(/data-testid="balance">\$5\.25</);
      // A browser without Fetch Metadata sends a real Origin instead.
      expect((await postForm('fund', 'amount=%241', cookie, { origin })).status).toBe(303);
      expect(await balanceOf(email)).toBe(625);
    });

    it('refuses bad amounts with the form shown again, and changes nothing', async () => {
      const { email, cookie } = await signedInUser();
      const payments = sandboxPaymentCount();
      for (const form of [
        'amount=abc',
        'amount=0',
        'amount=-1',
        'amount=1.234',
        'amount=1000.01',
        'amount=',
        '',
        'other=1',
        'amount=1&amount=2',
        `amount=${'9'.repeat(40)}`,
      ]) {
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
      const exchange = await httpRequest(walletLoginUrl(service.walletUrl, token), { headers: { 'sec-fetch-site': 'none' } });
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
      // The pre-session cookie of a link followed from a page is scoped the same way.
      const followed = await getWithHost(local, 'wallet.example.test', {});
      expect(followed.setCookie).toMatch(/^svc_wallet_pending=[^;]+; Max-Age=\d+; Path=\/pay; HttpOnly; Secure; SameSite=Lax$/);
      const direct = await httpRequest(local, { headers: { 'sec-fetch-site': 'none' } });
      expect(direct.headers.get('set-cookie')).toMatch(/; Path=\/wallet(;|$)/);
      expect(direct.headers.get('set-cookie')).not.toMatch(/Secure/);
    } finally {
      await service.close();
      removeTempDirs();
    }
  });
});

function getWithHost(url: string, host: string, headers: Record<string, string> = TYPED): Promise<{ status: number; setCookie: string }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { ...headers, host } }, (res) => {
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

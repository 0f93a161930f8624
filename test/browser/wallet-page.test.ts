// The wallet page in a real browser: headless Chromium (Debian's /usr/bin/chromium, never a downloaded one) driven
// by playwright-core against the real svc-api. Sign-in by a typed link, the token leaving the address bar and the
// history, the cookie's flags, the headers, funding through the sandbox, sign-out, and the pages for bad links.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { MovableClock } from '../helpers/clock.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { nodeFor } from '../helpers/protocol-node.js';
import { httpRequest } from '../helpers/http.js';
import { browserUnavailable, launchChromium, SCREENSHOTS } from '../helpers/chromium.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';

const DAY_MS = 24 * 60 * 60 * 1000;

describe.skipIf(browserUnavailable !== undefined)('wallet page in Chromium', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });
  let context: BrowserContext;
  let page: Page;
  /** Console messages: a CSP violation (a style the hash does not allow) shows up here. */
  let consoleMessages: string[] = [];

  beforeAll(async () => {
    ({ context, page, messages: consoleMessages } = await launchChromium());
  });
  afterEach(async () => {
    await context.clearCookies();
  });
  afterAll(async () => {
    await context?.close();
  });

  const loginUrl = (token?: string) => walletLoginUrl(service.walletUrl, token);
  const balanceText = () => page.getByTestId('balance').textContent();

  function expectWalletHeaders(headers: Record<string, string>): void {
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['cache-control']).toBe('no-store');
    expect(headers['content-security-policy']).toMatch(
      /^default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect(headers['x-content-type-options']).toBe('nosniff');
  }

  async function navigationHistory(): Promise<string[]> {
    const cdp = await context.newCDPSession(page);
    try {
      const { entries } = (await cdp.send('Page.getNavigationHistory')) as { entries: Array<{ url: string }> };
      return entries.map((entry) => entry.url);
    } finally {
      await cdp.detach();
    }
  }

  it('signs in by link, strips the token from the address bar and the history, and shows the wallet', async () => {
    const email = uniqueEmail('browser');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const node = await nodeFor(service.baseUrl, email, ['agent_ops_monitor_004']);
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      body: { user_id: email, agent_id: 'agent_ops_monitor_004' },
      token,
      headers: { 'idempotency-key': randomUUID() },
    });
    await node.stop();
    expect(run.status, run.text).toBe(200);

    const response = (await page.goto(loginUrl(token)))!;
    expect(page.url()).toBe(loginUrl());
    expect(page.url()).not.toContain('token');
    expect((await navigationHistory()).filter((url) => url.includes('token'))).toEqual([]);

    // The redirect that set the cookie and the page it led to both carry the headers.
    const exchange = (await response.request().redirectedFrom()!.response())!;
    expect(exchange.status()).toBe(303);
    expectWalletHeaders(await exchange.allHeaders());
    expect(response.status()).toBe(200);
    expectWalletHeaders(await response.allHeaders());

    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: 'svc_wallet', httpOnly: true, sameSite: 'Strict', path: '/wallet', secure: false });
    expect(cookies[0]!.value).not.toBe(token);
    expect(token).not.toContain(cookies[0]!.value);
    expect(cookies[0]!.expires * 1000 - Date.now()).toBeLessThanOrEqual(12 * 60 * 60 * 1000);

    await expect.poll(balanceText).toBe('$0.96');
    expect(await page.getByTestId('email').textContent()).toBe(email);
    expect(await page.getByTestId('chain').textContent()).toContain('chain 1202');
    const row = page.getByRole('region', { name: 'Recent runs' }).getByRole('row').filter({ hasText: 'Ops monitor agent' });
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      expect.stringContaining('Ops monitor agent'),
      'succeeded',
      '$0.04',
      expect.stringMatching(/^(just now|\d+ min ago)$/),
    ]);
    expect(await page.evaluate<string>('document.cookie')).toBe('');
    // The hashed stylesheet applied, and nothing was refused by the policy.
    expect(await page.evaluate<string>('getComputedStyle(document.body).backgroundColor')).toBe('rgb(243, 245, 248)');
    expect(consoleMessages.filter((text) => /Content Security Policy|Refused/.test(text))).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'wallet-signed-in.png'), fullPage: true });

    const reloaded = (await page.reload())!;
    expect(reloaded.status()).toBe(200);
    expect(page.url()).toBe(loginUrl());
    expect(await balanceText()).toBe('$0.96');

    await page.setViewportSize({ width: 375, height: 740 });
    await page.screenshot({ path: join(SCREENSHOTS, 'wallet-phone.png'), fullPage: true });
    // Readable on a phone: nothing wider than the screen.
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await page.setViewportSize({ width: 900, height: 900 });
  });

  it('funds the wallet through the sandbox provider and shows the new balance; a bad amount changes nothing', async () => {
    const email = uniqueEmail('fund');
    const { token } = await mintToken(service, email, 'svc_starter_agents');
    await page.goto(loginUrl(token));
    expect(await balanceText()).toBe('$0.00');

    const posts: Array<Record<string, string>> = [];
    const onRequest = (request: Request) => {
      if (request.method() === 'POST') void request.allHeaders().then((headers) => posts.push(headers));
    };
    page.on('request', onRequest);
    await page.getByLabel('Amount in dollars').fill('2.50');
    await Promise.all([page.waitForURL(loginUrl()), page.getByRole('button', { name: 'Add funds' }).click()]);
    await expect.poll(balanceText).toBe('$2.50');
    expect(await service.ctx.ledger.balance(email)).toBe(250);
    page.off('request', onRequest);
    // What Chromium sends from a no-referrer page: Origin null, and Fetch Metadata that says same-origin.
    expect(posts[0]).toMatchObject({ origin: 'null', 'sec-fetch-site': 'same-origin' });

    await page.getByLabel('Amount in dollars').fill('lots');
    const refused = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/wallet/fund')),
      page.getByRole('button', { name: 'Add funds' }).click(),
    ]).then(([r]) => r);
    expect(refused.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain('Enter an amount in dollars');
    expect(await page.getByLabel('Amount in dollars').inputValue()).toBe('lots');
    expect(await balanceText()).toBe('$2.50');
    expect(await service.ctx.ledger.balance(email)).toBe(250);
    await page.screenshot({ path: join(SCREENSHOTS, 'wallet-fund-error.png'), fullPage: true });
  });

  it('signs out: the session ends, the cookie goes, and Back shows no stale wallet', async () => {
    const email = uniqueEmail('out');
    const { token } = await mintToken(service, email, 'svc_starter_agents');
    await page.goto(loginUrl(token));
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Your wallet');

    await Promise.all([page.waitForURL(loginUrl()), page.getByRole('button', { name: 'Sign out' }).click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to your wallet');
    expect(await page.getByText('swarm-node wallet login').count()).toBeGreaterThan(0);
    expect(await context.cookies()).toEqual([]);
    // Cache-Control: no-store: going back fetches the page again instead of showing the signed-in copy.
    await page.goBack();
    expect(page.url()).toBe(loginUrl());
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to your wallet');
    expect(await page.content()).not.toContain(email);
  });

  it('shows a clear page for a bad or expired link, with no redirect and no cookie', async () => {
    const bad = (await page.goto(loginUrl('this.is-not.a-jwt')))!;
    expect(bad.status()).toBe(401);
    expect(bad.request().redirectedFrom()).toBeNull();
    expectWalletHeaders(await bad.allHeaders());
    expect(await page.getByRole('alert').textContent()).toContain('This sign-in link is not valid');
    expect(await page.getByRole('heading', { name: 'How to sign in' }).count()).toBe(1);
    expect(await page.getByText('swarm-node wallet login').count()).toBe(1);
    expect(await context.cookies()).toEqual([]);
    await page.screenshot({ path: join(SCREENSHOTS, 'wallet-bad-link.png'), fullPage: true });

    const { token } = await mintToken(service, uniqueEmail('expired'), 'svc_starter_agents');
    clock.advance(31 * DAY_MS);
    try {
      const expired = (await page.goto(loginUrl(token)))!;
      expect(expired.status()).toBe(401);
      expect(await page.getByRole('alert').textContent()).toContain('has expired');
      expect(await context.cookies()).toEqual([]);
    } finally {
      clock.advance(-31 * DAY_MS);
    }
  });

  it('signed in, a link to the wallet followed from another site leads on to the wallet', async () => {
    // A link with a token from another site asks "Continue as" first (test/browser/sign-in-link.test.ts).
    const { token } = await mintToken(service, uniqueEmail('linked'), 'svc_starter_agents');
    await page.goto(loginUrl(token));
    await context.route('http://mail.example.test/**', (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><a href="${loginUrl()}">Open your wallet</a>` }),
    );
    try {
      await page.goto('http://mail.example.test/inbox');
      await Promise.all([page.waitForURL(loginUrl()), page.getByRole('link').click()]);
      // SameSite=Strict: Chromium holds the session cookie back on a navigation from another site, so the bare page
      // says so and offers a same-site link, which carries it.
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to your wallet');
      expect(await page.getByRole('status').textContent()).toContain('held back the session');
      await Promise.all([page.waitForResponse(loginUrl()), page.getByRole('link', { name: 'Open your wallet' }).click()]);
      await page.waitForLoadState();
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Your wallet');
    } finally {
      await context.unroute('http://mail.example.test/**');
    }
  });
});

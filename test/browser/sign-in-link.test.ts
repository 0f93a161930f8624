// Login CSRF in a real browser (docs/api.md "Wallet page"): headless Chromium against the real svc-api, a victim
// signed in, and pages of an attacker's that send the browser to a sign-in link of the attacker's account: from
// another site (a route Chromium treats as its own site), and from the same host on another port (same-site, so the
// Strict session cookie goes along), by navigation and by a form they submit themselves. None of them replaces the
// victim's session, and a secret the victim sets afterwards stays theirs. Then what must go on working: a typed link
// signs in at once, a link from a page or from `swarm-node wallet login --open` by its "Continue as" button.
import { createServer, type Server } from 'node:http';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { writeHandoffPage } from '../../src/node/identity/browser-handoff.js';
import {
  accessibilityProblems,
  browserUnavailable,
  launchChromium,
  policyViolations,
  screenshot,
  type Browser,
} from '../helpers/chromium.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';

const ATTACKER_SITE = 'http://attacker.example.test';
/** An attacker's page goes on before it has loaded: waiting for it to commit is all a test can. */
const COMMITTED = { waitUntil: 'commit' } as const;
const STRICT_POLICY =
  /^default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/;

/** An attacker's pages: one that sends the browser to a URL, one that submits a form to it, with no user action. */
const navigatesTo = (url: string) => `<!doctype html><title>win</title><script>location.href = ${JSON.stringify(url)};</script>`;
const postsTo = (url: string, fields: Record<string, string>) =>
  `<!doctype html><title>win</title><form method="post" action="${url}">${Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
    .join('')}</form><script>document.forms[0].submit();</script>`;

describe.skipIf(browserUnavailable !== undefined)('sign-in links in Chromium', () => {
  const service = useSvcApi();
  let browser: Browser;
  /** The same host as the wallet on another port: a real server, whose pages Chromium holds same-site. */
  let otherPort: Server;
  const otherPortPages = new Map<string, string>();

  beforeAll(async () => {
    browser = await launchChromium();
    otherPort = createServer((request, response) => {
      const body = otherPortPages.get(request.url!);
      response.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/html' }).end(body ?? '');
    });
    await new Promise<void>((resolve) => otherPort.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    await browser.context.clearCookies();
    await browser.context.unrouteAll();
    otherPortPages.clear();
  });
  afterAll(async () => {
    await browser?.context.close();
    await new Promise((resolve) => otherPort?.close(resolve));
  });

  const page = () => browser.page;
  const heading = () => page().getByRole('heading', { level: 1 }).textContent();
  const sessionsOf = (email: string) =>
    (service.db.prepare('SELECT count(*) AS n FROM wallet_sessions WHERE user_id = ?').get(email) as { n: number }).n;
  /** The wallet as the browser reaches it: at the service's own address, or at `localhost` on its port. */
  const walletAt = (host: string) => service.walletUrl.replace('127.0.0.1', host);

  async function sessionCookie(walletUrl: string): Promise<string | undefined> {
    return (await browser.context.cookies(walletUrl)).find((cookie) => cookie.name === 'svc_wallet')?.value;
  }

  /** A victim signed in by typing their link, and the link of an attacker's account. */
  async function victimSignedIn(walletUrl = service.walletUrl): Promise<{
    victim: string;
    victimToken: string;
    attacker: string;
    attackerLink: string;
    cookie: string;
  }> {
    const victim = uniqueEmail('victim');
    const attacker = uniqueEmail('attacker');
    const { token: victimToken } = await mintToken(service, victim);
    await page().goto(walletLoginUrl(walletUrl, victimToken));
    expect(await page().getByTestId('email').textContent()).toBe(victim);
    const cookie = (await sessionCookie(walletUrl))!;
    expect(cookie).toBeDefined();
    return { victim, victimToken, attacker, attackerLink: walletLoginUrl(walletUrl, (await mintToken(service, attacker)).token), cookie };
  }

  /** The victim's browser is still the victim's: the same session cookie, their wallet, no session of the attacker's. */
  async function expectStillVictim(walletUrl: string, victim: string, attacker: string, cookie: string): Promise<void> {
    expect(await sessionCookie(walletUrl)).toBe(cookie);
    expect(sessionsOf(attacker)).toBe(0);
    await page().goto(`${walletUrl}/login`);
    expect(await page().getByTestId('email').textContent()).toBe(victim);
  }

  /** Waits until the browser is at a wallet page without the token: the sign-in page, or the wallet itself. */
  const atWallet = (walletUrl = service.walletUrl) =>
    page().waitForURL((url) => url.search === '' && [`${walletUrl}/sign-in`, `${walletUrl}/login`].includes(url.origin + url.pathname));

  /** Opens a page that sends the browser on by itself, and waits until it ends at a wallet page. */
  async function followed(attackerPage: string, walletUrl: string): Promise<void> {
    await page().goto(attackerPage, COMMITTED);
    await atWallet(walletUrl);
  }

  async function routeAttackerSite(pages: Record<string, string>): Promise<void> {
    await browser.context.route(`${ATTACKER_SITE}/**`, (route) => {
      const body = pages[new URL(route.request().url()).pathname];
      return body === undefined ? route.fulfill({ status: 404 }) : route.fulfill({ contentType: 'text/html', body });
    });
  }

  it("a cross-site navigation to the attacker's link leaves the victim signed in, and their secret theirs", async () => {
    const { victim, victimToken, attacker, attackerLink, cookie } = await victimSignedIn();
    await routeAttackerSite({ '/win': navigatesTo(attackerLink) });
    await followed(`${ATTACKER_SITE}/win`, service.walletUrl);
    expect(await sessionCookie(service.walletUrl)).toBe(cookie);
    expect(page().url()).toBe(`${service.walletUrl}/sign-in`);
    // Arrived from another site, the Strict session cookie was held back: the page names only the link's account.
    expect(await heading()).toBe(`Continue as ${attacker}?`);
    await expectStillVictim(service.walletUrl, victim, attacker, cookie);

    // What the attack was for: the victim sets a secret, and it is the victim's.
    await page().goto(`${service.walletUrl}/secrets`);
    await page().getByLabel('Name').fill('DEPLOY_KEY');
    await page().getByLabel('Value').fill('victim-secret-value');
    await Promise.all([page().waitForURL(`${service.walletUrl}/secrets`), page().getByRole('button', { name: 'Set secret' }).click()]);
    const victimSecrets = await httpRequest(`${service.baseUrl}/v1/swarm/secrets`, { token: victimToken });
    expect((victimSecrets.body.secrets as Array<{ name: string }>).map((secret) => secret.name)).toEqual(['DEPLOY_KEY']);
    expect(service.db.prepare('SELECT count(*) AS n FROM user_secrets WHERE user_id = ?').get(attacker)).toEqual({ n: 0 });
    expect(service.db.prepare('SELECT count(*) AS n FROM user_secrets WHERE user_id = ?').get(victim)).toEqual({ n: 1 });
  });

  it("a cross-site, auto-submitted form replaces no session, even with the attacker's sign-in waiting in the browser", async () => {
    const { victim, attacker, attackerLink, cookie } = await victimSignedIn();
    await routeAttackerSite({
      '/win': navigatesTo(attackerLink),
      '/post': postsTo(`${service.walletUrl}/sign-in`, { form_token: 'A'.repeat(43) }),
      '/post-token': postsTo(`${service.walletUrl}/login`, { token: new URL(attackerLink).searchParams.get('token')! }),
    });
    // First the link, so that the attacker's sign-in waits in this browser (its pre-session cookie), then the forms.
    await followed(`${ATTACKER_SITE}/win`, service.walletUrl);
    expect(await sessionCookie(service.walletUrl)).toBe(cookie);
    for (const [path, target, status] of [
      ['/post', 'sign-in', 403],
      ['/post-token', 'login', 404],
    ] as const) {
      const [answer] = await Promise.all([
        page().waitForResponse(`${service.walletUrl}/${target}`),
        page().goto(`${ATTACKER_SITE}${path}`, COMMITTED),
      ]);
      expect(answer.request().method()).toBe('POST');
      expect(answer.status(), path).toBe(status);
      await page().waitForURL(`${service.walletUrl}/${target}`);
    }
    await expectStillVictim(service.walletUrl, victim, attacker, cookie);
  });

  for (const host of ['127.0.0.1', 'localhost']) {
    it(`a same-site page on another port of ${host} replaces no session, by navigation or by its form`, async () => {
      const walletUrl = walletAt(host);
      const { victim, attacker, attackerLink, cookie } = await victimSignedIn(walletUrl);
      const other = `http://${host}:${(otherPort.address() as { port: number }).port}`;
      otherPortPages.set('/win', navigatesTo(attackerLink));
      otherPortPages.set('/post', postsTo(`${walletUrl}/sign-in`, { form_token: 'A'.repeat(43), replace: victim }));

      await followed(`${other}/win`, walletUrl);
      expect(await sessionCookie(walletUrl)).toBe(cookie);
      // Same-site: the Strict session cookie came along, so the page names the session it would end.
      expect(await heading()).toBe(`Switch to ${attacker}?`);
      expect(await page().getByText(`You are signed in as ${victim}; switch to ${attacker}?`).count()).toBe(1);

      // Its form carries the cookies too (same-site), but neither its Origin nor a token of the page's.
      const [answer] = await Promise.all([page().waitForResponse(`${walletUrl}/sign-in`), page().goto(`${other}/post`, COMMITTED)]);
      expect(answer.status()).toBe(403);
      expect(await answer.request().allHeaders()).toMatchObject({ 'sec-fetch-site': 'same-site', origin: other });
      await page().waitForURL(`${walletUrl}/sign-in`);
      await expectStillVictim(walletUrl, victim, attacker, cookie);
    });
  }

  it('a typed link signs in at once; a link from another site by its "Continue as" button, accessible and within the policy', async () => {
    const email = uniqueEmail('continue');
    const link = walletLoginUrl(service.walletUrl, (await mintToken(service, email)).token);
    const typed = (await page().goto(link))!;
    expect(await typed.request().redirectedFrom()!.allHeaders()).toMatchObject({ 'sec-fetch-site': 'none' });
    expect(await page().getByTestId('email').textContent()).toBe(email);
    await browser.context.clearCookies();

    await routeAttackerSite({ '/inbox': `<!doctype html><title>mail</title><a href="${link}">Open your wallet</a>` });
    await page().goto(`${ATTACKER_SITE}/inbox`);
    const before = browser.messages.length;
    await page().getByRole('link').click();
    await atWallet();
    expect(await sessionCookie(service.walletUrl)).toBeUndefined();
    expect(page().url()).toBe(`${service.walletUrl}/sign-in`);
    // Shown again as it was: the pre-session cookie still waits.
    const shown = (await page().reload())!;
    expect(shown.headers()['content-security-policy']).toMatch(STRICT_POLICY);
    expect(await heading()).toBe(`Continue as ${email}?`);
    await screenshot(page(), 'wallet-continue-as');
    expect(await accessibilityProblems(page())).toEqual([]);

    const button = page().getByRole('button', { name: `Continue as ${email}` });
    await Promise.all([page().waitForURL(`${service.walletUrl}/login`), button.click()]);
    expect(await page().getByTestId('email').textContent()).toBe(email);
    expect(policyViolations(browser.messages.slice(before))).toEqual([]);
    const cdp = await browser.context.newCDPSession(page());
    const { entries } = (await cdp.send('Page.getNavigationHistory')) as { entries: Array<{ url: string }> };
    await cdp.detach();
    expect(entries.filter((entry) => entry.url.includes('token'))).toEqual([]);
  });

  it("signed in as one account, a link of another's from another site asks to switch before it does", async () => {
    const { victim: first, attacker: second, attackerLink: secondLink } = await victimSignedIn();
    await routeAttackerSite({ '/inbox': `<!doctype html><title>mail</title><a href="${secondLink}">Open your wallet</a>` });
    await page().goto(`${ATTACKER_SITE}/inbox`);
    await page().getByRole('link').click();
    await atWallet();
    expect(page().url()).toBe(`${service.walletUrl}/sign-in`);
    await page()
      .getByRole('button', { name: `Continue as ${second}` })
      .click();
    // The page could not see the session (held back); the button's POST could, and asks.
    await expect.poll(heading).toBe(`Switch to ${second}?`);
    expect(await page().getByText(`You are signed in as ${first}; switch to ${second}?`).count()).toBe(1);
    await screenshot(page(), 'wallet-switch-to');
    expect(await accessibilityProblems(page())).toEqual([]);
    expect(sessionsOf(second)).toBe(0);

    const button = page().getByRole('button', { name: `Switch to ${second}` });
    await Promise.all([page().waitForURL(`${service.walletUrl}/login`), button.click()]);
    expect(await page().getByTestId('email').textContent()).toBe(second);
    expect(sessionsOf(first)).toBe(0);
  });

  it('swarm-node wallet login --open: its page forwards to the link, and the button signs in', async () => {
    const email = uniqueEmail('opened');
    const handoff = writeHandoffPage(walletLoginUrl(service.walletUrl, (await mintToken(service, email)).token));
    try {
      // A file's page is another origin: the browser says cross-site, so the button is asked for.
      await followed(pathToFileURL(handoff.path).href, service.walletUrl);
      expect(page().url()).toBe(`${service.walletUrl}/sign-in`);
      await page()
        .getByRole('button', { name: `Continue as ${email}` })
        .click();
      await expect.poll(() => page().getByTestId('email').textContent()).toBe(email);
    } finally {
      handoff.remove();
    }
  });
});

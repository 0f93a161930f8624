// The console in a real chromium() (docs/api.md "Console"): headless Chromium against the real svc-api, each page visited
// with data made through the API (a user signed in by a mailed code, a funded wallet, nodes enrolled with deploy
// tokens, runs executed through them with their logs and artifacts, a budget, a secret, a webhook delivered to a real
// HTTPS receiver), a screenshot of each kept in test-output/, and each checked for accessibility (axe-core's rules:
// labels, landmarks, contrast; headings in order) and for anything the page's policy refused. Then what only a
// chromium() shows: the log followed live into its live region, a cancel, keyboard use, the step-up by code, a download.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { accessibilityProblems, browserUnavailable, useChromium, policyViolations, screenshot, visitChecked } from '../helpers/chromium.js';
import { MovableClock } from '../helpers/clock.js';
import { finished, finishedRun, heldRun } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const SIXTEEN_MINUTES = 16 * 60 * 1000;

describe.skipIf(browserUnavailable !== undefined)('console in Chromium', () => {
  const clock = new MovableClock();
  let receiver: HttpsReceiver;
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
  });
  const service = useSvcApi(() => ({ clock, webhookAllowPrivate: true, webhookCa: receiver.certPem }));
  const chromium = useChromium();
  afterAll(async () => {
    await stopServingNodes();
    await receiver?.close();
  });

  const page = () => chromium().page;
  const consoleUrl = (path: string) => `${service.walletUrl}/${path}`;
  const api = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });

  /** A paying user signed in by a mailed code, funded through the sandbox provider, and the console open. */
  async function signedIn(label: string): Promise<{ email: string; token: string }> {
    const email = uniqueEmail(label);
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 200);
    await page().goto(walletLoginUrl(service.walletUrl, token));
    expect(await page().getByRole('heading', { level: 1 }).textContent()).toBe('Your wallet');
    return { email, token };
  }

  /** Does what submits a form, and waits for the page it leads to (the same URL again, after a redirect, included). */
  async function navigating(action: () => Promise<void>): Promise<void> {
    await Promise.all([page().waitForEvent('framenavigated'), action()]);
    await page().waitForLoadState();
  }

  /** Opens a console page: its status, a screenshot, no accessibility problem and nothing refused by the policy. */
  async function visit(path: string, screenshotName: string, status = 200): Promise<void> {
    await visitChecked(chromium(), consoleUrl(path), screenshotName, status);
  }

  it('shows every page with data made through the API, accessible and within its policy', { timeout: 90_000 }, async () => {
    const { email, token } = await signedIn('pages');
    const hook = await api('/v1/swarm/webhooks', token, {
      method: 'POST',
      body: { url: `${receiver.url}/hooks/console`, description: 'CI' },
    });
    expect(hook.status, hook.text).toBe(201);
    expect((await api('/v1/swarm/budgets/all/day', token, { method: 'PUT', body: { cap_cents: 500 } })).status).toBe(200);
    expect((await api('/v1/swarm/secrets/OPENAI_API_KEY', token, { method: 'PUT', body: { value: 'sk-console-secret-1' } })).status).toBe(
      200,
    );

    const good = await heldRun(service.baseUrl, email, token);
    await good.log(['checking 3 endpoints', { text: 'slow answer from db-1 (812 ms)', stream: 'stderr' }, 'all checks passed']);
    await good.artifact('report.csv', Buffer.from('endpoint,ms\napi,41\ndb-1,812\n'));
    good.finish();
    const bad = await heldRun(service.baseUrl, email, token, {
      agent: 'agent_dev_review_012',
      input: CONTRACT_INPUTS.agent_dev_review_012,
    });
    await bad.log(['cloning the repository']);
    bad.finish({ status: 'failed', output: { error: 'clone_failed', message: 'the repository could not be read' } });
    await finished(service.baseUrl, token, good.run.run_id);
    await finished(service.baseUrl, token, bad.run.run_id);
    await receiver.waitForCount(6, 'the runs’ events at the receiver');

    await visit('login', 'console-wallet');
    const wallet = await api('/v1/swarm/wallet', token);
    expect(await page().getByTestId('balance').textContent()).toBe(`$${(wallet.body.balance_cents / 100).toFixed(2)}`);

    await visit('nodes', 'console-nodes');
    expect(await page().getByRole('row').filter({ hasText: good.node.node_id }).getByRole('cell').nth(1).textContent()).toBe('online');

    await visit('runs', 'console-runs');
    expect(await page().getByRole('row').filter({ hasText: good.run.run_id }).getByRole('cell').allTextContents()).toEqual([
      expect.stringContaining('Ops monitor agent'),
      'succeeded',
      '$0.04',
      expect.stringMatching(/^(just now|\d+ min ago)$/),
      expect.stringMatching(/^\d+ s$/),
      expect.stringMatching(/^\d+ s$/),
      'test-node',
      'API',
    ]);
    await page().getByLabel('Status').selectOption('failed');
    await navigating(() => page().getByRole('button', { name: 'Show runs' }).click());
    expect(page().url()).toContain('status=failed');
    expect(await page().getByRole('row').filter({ hasText: bad.run.run_id }).count()).toBe(1);
    expect(await page().getByRole('row').filter({ hasText: good.run.run_id }).count()).toBe(0);

    await visit(`runs/${good.run.run_id}`, 'console-run');
    expect(await page().locator('#run-status').textContent()).toBe('succeeded');
    expect(await page().getByRole('log', { name: 'Events' }).textContent()).toContain('This run emitted no event.');
    expect(await page().getByRole('log', { name: 'Log' }).locator('div').allTextContents()).toEqual([
      'checking 3 endpoints',
      'slow answer from db-1 (812 ms)',
      'all checks passed',
    ]);
    expect(await page().getByRole('button', { name: 'Cancel this run' }).count()).toBe(0);
    const [download] = await Promise.all([page().waitForEvent('download'), page().getByRole('link', { name: 'report.csv' }).click()]);
    expect(download.suggestedFilename()).toBe('report.csv');
    expect(readFileSync((await download.path())!, 'utf8')).toBe('endpoint,ms\napi,41\ndb-1,812\n');
    await visit(`runs/${bad.run.run_id}`, 'console-run-failed');
    expect(await page().getByRole('region', { name: 'Output' }).textContent()).toContain('the repository could not be read');

    await visit('usage', 'console-usage');
    expect(await page().getByTestId('usage-net').textContent()).toBe('$0.04');
    expect(
      await page()
        .getByRole('img', { name: /Net spend per day/ })
        .count(),
    ).toBe(1);
    expect(await page().getByRole('row').filter({ hasText: 'Ops monitor agent' }).getByRole('cell').allTextContents()).toEqual([
      '1',
      '$0.04',
      '$0.00',
      '$0.04',
    ]);

    await visit('budgets', 'console-budgets');
    expect(await page().getByRole('row').filter({ hasText: 'all agents' }).getByRole('cell').nth(2).textContent()).toBe('$5.00');
    await visit('secrets', 'console-secrets');
    expect(await page().getByRole('cell', { name: 'OPENAI_API_KEY', exact: true }).count()).toBe(1);
    expect(await page().content()).not.toContain('sk-console-secret-1');
    await visit('webhooks', 'console-webhooks');
    await visit(`webhooks/${hook.body.endpoint_id}`, 'console-webhook');
    const succeeded = page().getByRole('row').filter({ hasText: 'succeeded' });
    expect(await succeeded.getByRole('cell').nth(2).textContent()).toBe('delivered');
    // A re-send: the receiver gets the event again, signed afresh.
    await navigating(() => succeeded.getByRole('button', { name: /^Re-send the succeeded event/ }).click());
    expect(page().url()).toBe(consoleUrl(`webhooks/${hook.body.endpoint_id}`));
    const again = await receiver.waitForCount(7, 'the event sent again');
    expect(again.filter((each) => each.headers['svc-event-type'] === 'run.succeeded')).toHaveLength(2);

    // Another user's run is the page for no run at all.
    await chromium().context.clearCookies();
    await signedIn('stranger');
    await visit(`runs/${good.run.run_id}`, 'console-run-not-found', 404);
    expect(await page().getByRole('alert').textContent()).toContain(`no run ${good.run.run_id} of yours`);
  });

  it(
    'follows a running log and its events live into their live regions, shows the end, and cancels a run from its page',
    { timeout: 60_000 },
    async () => {
      const { email, token } = await signedIn('follow');
      const held = await heldRun(service.baseUrl, email, token);
      await held.log(['starting']);
      await held.events([{ type: 'progress', data: { done: 1, total: 3 } }]);
      await visit(`runs/${held.run.run_id}`, 'console-run-live');
      const events = page().getByRole('log', { name: 'Events' });
      expect(await events.locator('div').allTextContents()).toEqual(['[progress] {"done":1,"total":3}']);
      const log = page().getByRole('log', { name: 'Log' });
      expect(await log.getAttribute('aria-labelledby')).toBe('log-heading');
      await expect.poll(() => page().getByRole('status').textContent()).toBe('Following the log live.');
      await held.log(['checked api: 41 ms', { text: 'checked db-1: <slow> 812 ms', stream: 'stderr' }]);
      await expect
        .poll(() => log.locator('div').allTextContents())
        .toEqual(['starting', 'checked api: 41 ms', 'checked db-1: <slow> 812 ms']);
      expect(await log.locator('div.stderr').count()).toBe(1);
      // An event's text is text: markup in its data shows as it is.
      await held.events([{ type: 'custom', name: 'step.done', data: { note: '<b>two</b>' } }]);
      await expect
        .poll(() => events.locator('div').allTextContents())
        .toEqual(['[progress] {"done":1,"total":3}', '[custom:step.done] {"note":"<b>two</b>"}']);
      expect(await events.locator('b').count()).toBe(0);
      await screenshot(page(), 'console-run-following');
      held.finish();
      await expect.poll(() => page().locator('#run-status').textContent()).toBe('succeeded');
      expect(await page().getByRole('status').textContent()).toContain('The run ended succeeded.');

      const other = await heldRun(service.baseUrl, email, token);
      await page().goto(consoleUrl(`runs/${other.run.run_id}`));
      await navigating(() => page().getByRole('button', { name: 'Cancel this run' }).click());
      await expect.poll(() => page().locator('#run-status').textContent(), { timeout: 20_000 }).toBe('cancelled');
      expect((await api(`/v1/swarm/runs/${other.run.run_id}`, token)).body).toMatchObject({ status: 'cancelled', charged_cents: 0 });
      expect(policyViolations(chromium().messages)).toEqual([]);
    },
  );

  it('works from the keyboard: the skip link, the navigation, a budget set and a refusal announced', async () => {
    await signedIn('keys');
    await page().goto(consoleUrl('budgets'));
    await page().keyboard.press('Tab');
    expect(await page().evaluate<string>('document.activeElement.textContent')).toBe('Skip to content');
    await page().keyboard.press('Enter');
    expect(page().url()).toBe(`${consoleUrl('budgets')}#main`);
    // The focus order from the skip link: into the form, its fields in reading order.
    const order: string[] = [];
    for (let step = 0; step < 4; step += 1) {
      await page().keyboard.press('Tab');
      order.push(await page().evaluate<string>('document.activeElement.id || document.activeElement.textContent'));
    }
    expect(order).toEqual(['budget-scope', 'budget-period', 'budget-cap', 'Set budget']);

    await page().getByLabel('Cap in dollars').focus();
    await page().keyboard.type('many');
    await navigating(() => page().keyboard.press('Enter'));
    expect(await page().getByRole('alert').textContent()).toContain('Enter the cap in dollars');
    expect(await page().getByLabel('Cap in dollars').getAttribute('aria-invalid')).toBe('true');
    expect(await accessibilityProblems(page())).toEqual([]);
    await screenshot(page(), 'console-budget-refused');

    await page().getByLabel('Cap in dollars').fill('3');
    await page().getByLabel('Period').selectOption('month');
    await navigating(() => page().getByLabel('Cap in dollars').press('Enter'));
    expect(await page().getByRole('row').filter({ hasText: 'per month' }).getByRole('cell').nth(2).textContent()).toBe('$3.00');
    await navigating(() => page().getByRole('button', { name: 'Remove the monthly budget on all agents' }).click());
    expect(await page().getByText('You have no budget').count()).toBe(1);
  });

  it(
    'asks for a mailed code before secrets and webhooks change once the sign-in is old, then changes them',
    { timeout: 60_000 },
    async () => {
      const { email, token } = await signedIn('stepup');
      clock.advance(SIXTEEN_MINUTES);
      try {
        await visit('secrets', 'console-secrets-confirm');
        expect(await page().getByLabel('Name').count()).toBe(0);
        await navigating(() => page().getByRole('button', { name: 'E-mail me a code' }).click());
        const reference = await page().locator('main code').first().textContent();
        const code = signInCodeOf(await nextMailTo(email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
        await screenshot(page(), 'console-confirm');
        expect(await accessibilityProblems(page())).toEqual([]);
        await page().getByLabel('Code from the e-mail').fill(code);
        await navigating(() => page().getByRole('button', { name: 'Confirm', exact: true }).click());
        expect(page().url()).toBe(consoleUrl('secrets'));

        await page().getByLabel('Name').fill('PATH');
        await page().getByLabel('Value').fill('secret-value-1');
        await navigating(() => page().getByRole('button', { name: 'Set secret' }).click());
        expect(await page().getByRole('alert').textContent()).toContain('PATH is reserved');
        expect(await page().getByLabel('Value').inputValue()).toBe('');
        await page().getByLabel('Name').fill('SMTP_PASSWORD');
        await page().getByLabel('Value').fill('line one\nline two');
        await navigating(() => page().getByRole('button', { name: 'Set secret' }).click());
        expect(await page().getByRole('cell', { name: 'SMTP_PASSWORD', exact: true }).count()).toBe(1);
        expect(((await api('/v1/swarm/secrets', token)).body.secrets as Array<{ name: string }>).map((secret) => secret.name)).toEqual([
          'SMTP_PASSWORD',
        ]);

        await page().goto(consoleUrl('webhooks'));
        await page().getByLabel('HTTPS URL').fill(`${receiver.url}/hooks/added`);
        await page().getByLabel('failed', { exact: true }).uncheck();
        await navigating(() => page().getByRole('button', { name: 'Add endpoint' }).click());
        const secret = await page().getByTestId('signing-secret').textContent();
        expect(secret).toMatch(/^whsec_/);
        await screenshot(page(), 'console-webhook-added');
        expect(await accessibilityProblems(page())).toEqual([]);
        const [endpoint] = (await api('/v1/swarm/webhooks', token)).body.webhooks as Array<{ events: string[] }>;
        expect(endpoint!.events).toEqual([
          'queued',
          'started',
          'succeeded',
          'cancelled',
          'schedule.paused',
          'schedule.resumed',
          'schedule.skipping',
        ]);
      } finally {
        clock.advance(-SIXTEEN_MINUTES);
      }
    },
  );

  it('fits a phone: no page wider than the screen', async () => {
    const { email, token } = await signedIn('phone');
    const held = await finishedRun(service.baseUrl, email, token);
    await page().setViewportSize({ width: 375, height: 740 });
    try {
      for (const path of ['runs', `runs/${held.run.run_id}`, 'usage', 'budgets']) {
        await page().goto(consoleUrl(path));
        expect(await page().evaluate<number>('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(375);
      }
      await screenshot(page(), 'console-phone-budgets');
    } finally {
      await page().setViewportSize({ width: 900, height: 900 });
    }
  });
});

// The console's runs as a person uses them (docs/api.md "Console"), in headless Chromium that believes it is in Tokyo:
// times in the browser's zone (UTC on hover) and relative where recent, the runs list with queue waits, durations,
// a date range and a search, its refresh while a run is in flight, and a run's page with its reason, refund, input,
// findings and a re-run after a page naming its price. Screenshots kept in test-output/, each page checked by axe-core.
import { afterAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { accessibilityProblems, browserUnavailable, useChromium, policyViolations, screenshot, visitChecked } from '../helpers/chromium.js';
import { finished, finishedRun, heldRun } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const TOKYO = 'Asia/Tokyo';

/** What the page's script must show for an ISO time in Tokyo (UTC+9, no summer time): "2026-12-03 04:05 GMT+9". */
function tokyoText(iso: string): string {
  const at = new Date(Date.parse(iso) + 9 * 3600 * 1000).toISOString();
  return `${at.slice(0, 16).replace('T', ' ')} GMT+9`;
}

describe.skipIf(browserUnavailable !== undefined)('console runs in Chromium (Asia/Tokyo)', () => {
  const service = useSvcApi();
  const chromium = useChromium({ width: 1100, height: 900 }, { timezoneId: TOKYO });
  afterAll(async () => {
    await stopServingNodes();
  });

  const page = () => chromium().page;
  const consoleUrl = (path: string) => `${service.walletUrl}/${path}`;

  async function signedIn(label: string): Promise<{ email: string; token: string }> {
    const email = uniqueEmail(label);
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 200);
    await page().goto(walletLoginUrl(service.walletUrl, token));
    return { email, token };
  }

  async function visit(path: string, screenshotName: string, status = 200): Promise<void> {
    await visitChecked(chromium(), consoleUrl(path), screenshotName, status);
  }

  it('shows times in the browser’s zone, UTC on hover, and relative where recent, on every console page', { timeout: 60_000 }, async () => {
    const { email, token } = await signedIn('tokyo');
    const held = await heldRun(service.baseUrl, email, token);
    await held.artifact('report.csv', Buffer.from('a,b\n'));
    held.finish();
    await finished(service.baseUrl, token, held.run.run_id);

    await visit(`runs/${held.run.run_id}`, 'console-run-tokyo');
    // Kept 30 days: far enough to be shown as a date, in Tokyo's time.
    const kept = page().getByRole('region', { name: 'Artifacts' }).locator('caption time');
    const keptAt = (await kept.getAttribute('datetime'))!;
    expect(await kept.textContent()).toBe(tokyoText(keptAt));
    expect(await kept.getAttribute('title')).toBe(`${keptAt.slice(0, 19).replace('T', ' ')} UTC`);
    // Created seconds ago: relative, with both on hover.
    const created = page().locator('dt:text-is("Created") + dd time');
    expect(await created.textContent()).toMatch(/^(just now|\d+ min ago)$/);
    const createdAt = (await created.getAttribute('datetime'))!;
    expect(await created.getAttribute('title')).toBe(`${tokyoText(createdAt)} (${createdAt.slice(0, 19).replace('T', ' ')} UTC)`);

    // Every console page runs the script, by its hash, with nothing refused.
    for (const path of ['login', 'runs', 'nodes', 'usage', 'budgets', 'secrets', 'webhooks']) {
      const before = chromium().messages.length;
      await page().goto(consoleUrl(path));
      const texts = await page().locator('time').allTextContents();
      for (const text of texts) expect(text, path).not.toMatch(/UTC$/);
      expect(policyViolations(chromium().messages.slice(before)), path).toEqual([]);
    }
  });

  it('lists runs with queue wait and duration, by date range and search, and refreshes while one runs', { timeout: 90_000 }, async () => {
    const { email, token } = await signedIn('runs-list');
    const done = await finishedRun(service.baseUrl, email, token);
    const running = await heldRun(service.baseUrl, email, token);

    await visit('runs', 'console-runs-in-flight');
    const row = page().getByRole('row').filter({ hasText: done.run.run_id });
    const cells = await row.getByRole('cell').allTextContents();
    expect(cells[4]).toMatch(/^\d+ s$/); // queue wait
    expect(cells[5]).toMatch(/^\d+ s$/); // duration
    expect(await page().locator('#auto-refresh').textContent()).toContain('refreshes every 10 s');

    // The in-flight run ends: the page reloads itself and shows it, then stops refreshing.
    running.finish();
    await expect
      .poll(() => page().getByRole('row').filter({ hasText: running.run.run_id }).getByRole('cell').nth(1).textContent(), {
        timeout: 45_000,
      })
      .toBe('succeeded');
    expect(await page().locator('#auto-refresh').count()).toBe(0);

    // A date range: today's runs, and none the day before (UTC days, both included).
    const today = new Date().toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await page().getByLabel('From (UTC day)').fill(today);
    await page().getByLabel('To (UTC day)').fill(today);
    await Promise.all([page().waitForURL(/since=/), page().getByRole('button', { name: 'Show runs' }).click()]);
    expect(await page().getByRole('row').filter({ hasText: done.run.run_id }).count()).toBe(1);
    await visit(`runs?since=${yesterday}&until=${yesterday}`, 'console-runs-range');
    expect(await page().getByText('No run matches these filters.').count()).toBe(1);
    expect(await page().getByLabel('From (UTC day)').inputValue()).toBe(yesterday);

    // The search: a run id opens its run; a status filters.
    await page().goto(consoleUrl('runs'));
    await page().getByLabel('Search').fill(done.run.run_id);
    await Promise.all([page().waitForURL(/runs\/[0-9a-f-]{36}$/), page().getByLabel('Search').press('Enter')]);
    expect(page().url()).toBe(consoleUrl(`runs/${done.run.run_id}`));
    await visit('runs?q=succeeded', 'console-runs-search');
    expect(await page().getByRole('row').filter({ hasText: 'succeeded' }).count()).toBe(2);
    await page().goto(consoleUrl('runs?q=failed'));
    expect(await page().getByText('No run matches these filters.').count()).toBe(1);
  });

  it(
    'shows a failed run’s reason and refund, its input and findings, and runs it again after naming its price',
    { timeout: 90_000 },
    async () => {
      const { email, token } = await signedIn('run-page');
      const review = await heldRun(service.baseUrl, email, token, { agent: 'agent_dev_review_012', input: { repo: '/srv/app' } });
      review.finish({
        status: 'succeeded',
        output: { summary: '1 finding', findings: [{ severity: 'error', file: 'src/app.ts', line: 12, message: 'unused variable x' }] },
      });
      await finished(service.baseUrl, token, review.run.run_id);
      await visit(`runs/${review.run.run_id}`, 'console-run-findings');
      const output = page().getByRole('region', { name: 'Output' });
      expect(await output.locator('#output-rendered').textContent()).toContain('error src/app.ts:12  unused variable x');
      expect(await output.locator('details').getAttribute('open')).toBeNull();
      expect(await page().getByRole('region', { name: 'Input' }).textContent()).toContain('"repo": "/srv/app"');
      expect(await page().getByRole('region', { name: 'Artifacts' }).textContent()).not.toContain('kept until');
      expect(await page().getByRole('region', { name: 'Attempts' }).getByRole('row').count()).toBe(2);

      const bad = await heldRun(service.baseUrl, email, token, { agent: 'agent_dev_review_012', input: { repo: '/srv/app' } });
      bad.finish({ status: 'failed', output: { error: 'clone_failed', message: 'the repository could not be read' } });
      await finished(service.baseUrl, token, bad.run.run_id);
      await visit(`runs/${bad.run.run_id}`, 'console-run-failed-refund');
      expect(await page().locator('#run-reason').textContent()).toBe('clone_failed: the repository could not be read');
      expect(await page().locator('#run-refund').textContent()).toMatch(/^\(refunded \$0\.12 to your wallet /);

      // Re-run: a page naming the price, then a new billed run of the same input.
      await Promise.all([page().waitForURL(/rerun\??$/), page().getByRole('button', { name: 'Run again with the same input' }).click()]);
      expect(await page().locator('#rerun-price').textContent()).toBe('$0.12');
      expect(await accessibilityProblems(page())).toEqual([]);
      await screenshot(page(), 'console-rerun-confirm');
      const before = (await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents as number;
      await Promise.all([
        page().waitForURL(/runs\/[0-9a-f-]{36}$/),
        page().getByRole('button', { name: 'Start the run for $0.12' }).click(),
      ]);
      const rerunId = page().url().split('/').at(-1)!;
      expect(rerunId).not.toBe(bad.run.run_id);
      const again = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${rerunId}`, { token });
      expect(again.body).toMatchObject({ agent_id: 'agent_dev_review_012', charged_cents: 12 });
      expect((await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents).toBe(before - 12);
      expect(await page().getByRole('region', { name: 'Input' }).textContent()).toContain('"repo": "/srv/app"');
      await screenshot(page(), 'console-rerun-started');
    },
  );
});

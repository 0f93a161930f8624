// The wallet's transaction history in a real chromium() (docs/api.md "Console"): headless Chromium against the real
// svc-api, a user funded through the sandbox provider, one run charged and one failed and refunded through a node of
// theirs, and the wallet page listing the funding, each charge and the refund, newest first, each with the balance it
// left, which ends at the balance GET /v1/swarm/wallet gives. Screenshot kept in test-output/, axe-core's rules passed.
import { afterAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { accessibilityProblems, browserUnavailable, useChromium, policyViolations, screenshot } from '../helpers/chromium.js';
import { finishedRun } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

describe.skipIf(browserUnavailable !== undefined)('wallet transactions in Chromium', () => {
  const service = useSvcApi();
  const chromium = useChromium();
  afterAll(async () => {
    await stopServingNodes();
  });

  it('lists the funding, each charge and each refund with a running balance, and names the chain', { timeout: 60_000 }, async () => {
    const page = chromium().page;
    const email = uniqueEmail('transactions');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 200);
    const good = await finishedRun(service.baseUrl, email, token);
    const bad = await finishedRun(service.baseUrl, email, token, {
      status: 'failed',
      output: { error: 'check_failed', message: 'db-1 did not answer' },
    });
    const wallet = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token });
    expect(wallet.body.balance_cents).toBe(196);

    const before = chromium().messages.length;
    const response = (await page.goto(walletLoginUrl(service.walletUrl, token)))!;
    expect(response.status()).toBe(200);
    await screenshot(page, 'console-wallet-transactions');
    expect(await accessibilityProblems(page)).toEqual([]);
    expect(policyViolations(chromium().messages.slice(before))).toEqual([]);

    const rows = page.getByTestId('transactions').locator('tbody tr');
    // Made moments ago: the layout's script shows each relative, its UTC time on hover.
    const RECENT = expect.stringMatching(/^(just now|\d+ s ago|\d+ min ago)$/);
    const cells = async (index: number) => (await rows.nth(index).getByRole('cell').allTextContents()).map((text) => text.trim());
    expect(await rows.count()).toBe(4);
    // Newest first: the refund of the failed run, its charge, the good run's charge, the funding.
    expect(await cells(0)).toEqual([RECENT, 'Refund', expect.stringContaining(bad.run.run_id), '+$0.04', '$1.96']);
    expect(await cells(1)).toEqual([RECENT, 'Charge', expect.stringContaining(bad.run.run_id), '−$0.04', '$1.92']);
    expect(await cells(2)).toEqual([RECENT, 'Charge', expect.stringContaining(good.run.run_id), '−$0.04', '$1.96']);
    expect(await cells(3)).toEqual([RECENT, 'Funding', expect.stringContaining('payment'), '+$2.00', '$2.00']);
    // Each time is a <time> with its instant, for the layout's script to show in the browser's zone.
    expect(await rows.nth(0).locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await rows.nth(0).locator('time').getAttribute('title')).toMatch(/\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$/);
    expect(await page.getByRole('link', { name: 'Ops monitor agent' }).first().getAttribute('href')).toBe(`runs/${bad.run.run_id}`);
    expect(await page.getByTestId('chain').textContent()).toContain('svc pay wallet, chain 1202');
  });
});

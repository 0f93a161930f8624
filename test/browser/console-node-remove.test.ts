// Removing a node from the console in a real chromium() (docs/api.md "Console", "Removing a node"): headless Chromium
// against the real svc-api, a node of the user's enrolled with a deploy token and serving an agent, its row's
// Remove… link, a confirmation page that says what removal does (screenshot kept, axe-core's rules passed), and the
// removal itself: the node gone from the fleet, its credential refused 410 node_removed. A stale sign-in is offered
// the code by mail instead of the button, and a foreign post is refused.
import { afterAll, describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { accessibilityProblems, browserUnavailable, useChromium, policyViolations, screenshot } from '../helpers/chromium.js';
import { MovableClock } from '../helpers/clock.js';
import { consoleCookie, consolePost, finished, heldRun } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const SIXTEEN_MINUTES = 16 * 60 * 1000;

describe.skipIf(browserUnavailable !== undefined)('console: removing a node in Chromium', () => {
  const clock = new MovableClock();
  const service = useSvcApi(() => ({ clock }));
  const chromium = useChromium();
  afterAll(async () => {
    await stopServingNodes();
  });

  it('confirms what removal does, then removes the node: gone from the fleet, its credential refused', { timeout: 60_000 }, async () => {
    const page = chromium().page;
    const email = uniqueEmail('remove');
    const token = await signIn(service.baseUrl, email);
    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, email), {
      agents: ['agent_ops_monitor_004'],
      answer: () => new Promise(() => undefined),
    });
    await page.goto(walletLoginUrl(service.walletUrl, token));
    await page.goto(`${service.walletUrl}/nodes`);
    await Promise.all([
      page.waitForEvent('framenavigated'),
      page.getByRole('link', { name: new RegExp(`^Remove .*${node.node_id}`) }).click(),
    ]);
    expect(page.url()).toBe(`${service.walletUrl}/nodes/${node.node_id}/remove`);
    await screenshot(page, 'console-node-remove');
    expect(await accessibilityProblems(page)).toEqual([]);
    expect(policyViolations(chromium().messages)).toEqual([]);
    const effects = await page.getByRole('region', { name: 'What removing it does' }).textContent();
    expect(effects).toContain('agent_ops_monitor_004');
    expect(effects).toContain('refunded when its lease runs out');

    await Promise.all([page.waitForEvent('framenavigated'), page.getByRole('button', { name: 'Remove this node' }).click()]);
    await page.waitForLoadState();
    expect(page.url()).toBe(`${service.walletUrl}/nodes`);
    expect(await page.getByText(node.node_id).count()).toBe(0);
    const fleet = await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token });
    expect((fleet.body.nodes as Array<{ node_id: string }>).map((each) => each.node_id)).not.toContain(node.node_id);
    const poll = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
      token: node.credential,
      body: { hostname: 'h', version: '1', capacity: 0, running: [], wait_seconds: 0 },
    });
    expect(poll.status).toBe(410);
    const audit = await httpRequest(`${service.baseUrl}/v1/audit`, { token });
    expect(JSON.stringify(audit.body)).toContain(node.node_id);
  });

  it("shows the run each node works on now, from the service's records, and idle once it ended", { timeout: 60_000 }, async () => {
    const page = chromium().page;
    const email = uniqueEmail('running');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const held = await heldRun(service.baseUrl, email, token);
    await page.goto(walletLoginUrl(service.walletUrl, token));
    await page.goto(`${service.walletUrl}/nodes`);
    await screenshot(page, 'console-nodes-running');
    expect(await accessibilityProblems(page)).toEqual([]);
    const row = page.getByRole('row').filter({ hasText: held.node.node_id });
    const cell = row.locator('td[data-label="Running now"]');
    expect(await cell.getByRole('link', { name: 'agent_ops_monitor_004' }).getAttribute('href')).toBe(`runs/${held.run.run_id}`);
    expect(await cell.locator('time').count()).toBe(1);
    held.finish();
    await finished(service.baseUrl, token, held.run.run_id);
    await page.reload();
    expect((await row.locator('td[data-label="Running now"]').textContent())?.trim()).toBe('idle');
  });

  it('asks for a mailed code when the sign-in is old, and refuses a post from another site', { timeout: 60_000 }, async () => {
    const email = uniqueEmail('remove-old');
    const token = await signIn(service.baseUrl, email);
    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, email), { agents: ['agent_ops_monitor_004'] });
    const cookie = await consoleCookie(service.walletUrl, token);
    const foreign = await consolePost(service.walletUrl, `nodes/${node.node_id}/remove`, {}, cookie, {
      'sec-fetch-site': 'cross-site',
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    clock.advance(SIXTEEN_MINUTES);
    try {
      await chromium().page.goto(walletLoginUrl(service.walletUrl, token));
      await chromium().page.goto(`${service.walletUrl}/nodes/${node.node_id}/remove`);
      expect(await chromium().page.getByRole('button', { name: 'Remove this node' }).count()).toBe(0);
      expect(await chromium().page.getByRole('button', { name: 'E-mail me a code' }).count()).toBe(1);
      const stale = await consolePost(service.walletUrl, `nodes/${node.node_id}/remove`, {}, cookie);
      expect(stale.status).toBe(401);
      expect(stale.text).toContain('removing a node cannot be undone');
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
    const fleet = await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token });
    expect((fleet.body.nodes as Array<{ node_id: string }>).map((each) => each.node_id)).toContain(node.node_id);
  });
});

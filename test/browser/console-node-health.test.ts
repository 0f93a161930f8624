// The nodes page's health and its Drain and Resume buttons (docs/api.md "Node health", "Draining a node", "Console"),
// in headless Chromium against the real svc-api: each node's load, memory in use, free disk, uptime and how long ago
// it said them; stale for a node gone offline, not reported for one that never said them. Drain marks the node
// drained and its polls are handed no run; Resume undoes it. Screenshot kept in test-output/, axe-core's rules
// passed; a post from another site is refused, and another user's node is the same 404 as none.
import { describe, expect, it } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import { accessibilityProblems, browserUnavailable, policyViolations, screenshot, useChromium } from '../helpers/chromium.js';
import { CONSOLE_AGENT, consoleCookie, consolePost } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { SAMPLE_HEALTH } from '../helpers/node-health-sample.js';

const HEALTH = SAMPLE_HEALTH;

describe.skipIf(browserUnavailable !== undefined)("console: nodes' health, drain and resume", () => {
  const service = useSvcApi();
  const chromium = useChromium({ width: 1400, height: 900 });
  const poll = (node: EnrolledTestNode, hostname: string, extra: Record<string, unknown> = {}) =>
    httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
      token: node.credential,
      body: { hostname, version: '0.1.0', capacity: 0, running: [], wait_seconds: 0, ...extra },
    });
  const fleet = async (token: string): Promise<Array<Record<string, unknown>>> =>
    (await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token })).body.nodes;

  it('shows each node health, stale when offline, not reported when never said', { timeout: 60_000 }, async () => {
    const email = uniqueEmail('health-page');
    const token = await signIn(service.baseUrl, email);
    const healthy = await enrollNode(service.baseUrl, email);
    const silent = await enrollNode(service.baseUrl, email);
    const gone = await enrollNode(service.baseUrl, email);
    expect((await poll(healthy, 'host-healthy', { health: HEALTH })).status).toBe(200);
    expect((await poll(silent, 'host-silent')).status).toBe(200);
    expect((await poll(gone, 'host-gone', { health: { ...HEALTH, load_1: 7.25 } })).status).toBe(200);
    const offline = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/offline`, { method: 'POST', token: gone.credential });
    expect(offline.status).toBe(204);

    const page = chromium().page;
    await page.goto(walletLoginUrl(service.walletUrl, token));
    await page.goto(`${service.walletUrl}/nodes`);
    await screenshot(page, 'console-nodes-health');
    expect(await accessibilityProblems(page)).toEqual([]);
    expect(policyViolations(chromium().messages)).toEqual([]);
    const health = async (node: EnrolledTestNode) =>
      (await page.getByRole('row').filter({ hasText: node.node_id }).locator('td[data-label="Health"]').innerText()).trim();
    const said = await health(healthy);
    expect(said).toMatch(
      /^load 0\.52 \/ 0\.40 \/ 0\.31\nmemory 38% used of 8\.0 GiB\ndisk 60\.0 GiB free of 100\.0 GiB\nup 3 d 2 h\nreported \d+ s ago$/,
    );
    expect(await health(silent)).toBe('not reported');
    expect(await health(gone)).toMatch(/^load 7\.25 \/ 0\.40 \/ 0\.31\n[^]*\nstale \(offline\): reported \d+ s ago$/);
  });

  it('drains a node with its button, its polls then handed no run, and resumes it', { timeout: 60_000 }, async () => {
    const email = uniqueEmail('drain-page');
    const token = await signIn(service.baseUrl, email);
    const node = await enrollNode(service.baseUrl, email);
    expect((await poll(node, 'host-drain', { health: HEALTH })).status).toBe(200);
    const page = chromium().page;
    await page.goto(walletLoginUrl(service.walletUrl, token));
    await page.goto(`${service.walletUrl}/nodes`);
    const row = page.getByRole('row').filter({ hasText: node.node_id });

    await Promise.all([
      page.waitForEvent('framenavigated'),
      page.getByRole('button', { name: `Drain host-drain (${node.node_id})` }).click(),
    ]);
    await page.waitForLoadState();
    expect(page.url()).toBe(`${service.walletUrl}/nodes`);
    expect(await row.locator('td[data-label="State"]').innerText()).toMatch(/^online\ndrained since .+: takes no new run$/);
    await screenshot(page, 'console-nodes-drained');
    expect(await accessibilityProblems(page)).toEqual([]);
    expect((await fleet(token))[0]).toMatchObject({ node_id: node.node_id, drained_at: expect.any(String) });
    expect((await poll(node, 'host-drain', { capacity: 4 })).body).toMatchObject({ runs: [], drained: true });
    // A run pinned to it waits, and its page says why.
    const registered = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/${CONSOLE_AGENT}`, {
      method: 'PUT',
      token: node.credential,
    });
    expect(registered.status).toBe(200);
    await fundWallet(service.baseUrl, email, 100);
    const pinned = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      token,
      headers: { 'idempotency-key': crypto.randomUUID(), prefer: 'respond-async' },
      body: { user_id: email, agent_id: CONSOLE_AGENT, node_id: node.node_id },
    });
    expect(pinned.status, pinned.text).toBe(202);
    await page.goto(`${service.walletUrl}/runs/${pinned.body.run_id}`);
    expect(await page.locator('#run-waiting').innerText()).toMatch(
      /^host-drain.*, drained since .+: this run is pinned to it and waits until it is resumed \(Nodes\)$/,
    );
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.goto(`${service.walletUrl}/nodes`);

    await Promise.all([
      page.waitForEvent('framenavigated'),
      page.getByRole('button', { name: `Resume host-drain (${node.node_id})` }).click(),
    ]);
    await page.waitForLoadState();
    expect((await row.locator('td[data-label="State"]').innerText()).trim()).toBe('online');
    expect((await fleet(token))[0]).toMatchObject({ drained_at: null });
    expect((await poll(node, 'host-drain', { capacity: 4 })).body.drained).toBeUndefined();
    const audit = await httpRequest(`${service.baseUrl}/v1/audit`, { token });
    const events = (audit.body.events as Array<{ kind: string; detail: Record<string, unknown> }>).filter((event) =>
      ['node_drained', 'node_resumed'].includes(event.kind),
    );
    expect(events.map((event) => [event.kind, event.detail.by])).toEqual([
      ['node_resumed', 'console'],
      ['node_drained', 'console'],
    ]);
  });

  it("refuses a post from another site, and another user's node is the same 404 as none", { timeout: 60_000 }, async () => {
    const email = uniqueEmail('drain-owner');
    const token = await signIn(service.baseUrl, email);
    const node = await enrollNode(service.baseUrl, email);
    const cookie = await consoleCookie(service.walletUrl, token);
    const foreign = await consolePost(service.walletUrl, `nodes/${node.node_id}/drain`, {}, cookie, {
      'sec-fetch-site': 'cross-site',
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    const strangerCookie = await consoleCookie(service.walletUrl, await signIn(service.baseUrl, uniqueEmail('drain-stranger')));
    const theirs = await consolePost(service.walletUrl, `nodes/${node.node_id}/drain`, {}, strangerCookie);
    const none = await consolePost(service.walletUrl, 'nodes/3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14/drain', {}, strangerCookie);
    expect(theirs.status).toBe(404);
    expect(none.status).toBe(404);
    expect((await fleet(token))[0]).toMatchObject({ node_id: node.node_id, drained_at: null });
    // Its own user's post from the console itself drains it.
    expect((await consolePost(service.walletUrl, `nodes/${node.node_id}/drain`, {}, cookie)).status).toBe(303);
    expect((await fleet(token))[0]).toMatchObject({ drained_at: expect.any(String) });
  });
});

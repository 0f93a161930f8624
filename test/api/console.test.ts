// The console over plain HTTP (docs/api.md "Console"; test/browser/console.test.ts drives it in Chromium): every page
// for the signed-in user only, another user's ids the same 404 as none, the forms' bad input refused with the page
// and its reason while nothing changes, and secrets and webhooks changed only after a recent sign-in, which the
// console renews with a mailed code.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { CONSOLE_AGENT, consoleCookie, consoleGet, consolePost, finished, finishedRun, heldRun } from '../helpers/console.js';
import { fundWallet, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { nextMailTo, signInCodeOf } from '../helpers/mailbox.js';
import { nodeFor, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { mintToken } from '../helpers/tokens.js';

const SIXTEEN_MINUTES = 16 * 60 * 1000;
const PAGES = ['login', 'nodes', 'runs', 'usage', 'budgets', 'schedules', 'secrets', 'webhooks'];

describe('console', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock });
  afterAll(stopServingNodes);

  async function user(label: string): Promise<{ email: string; token: string; cookie: string }> {
    const email = uniqueEmail(label);
    const { token } = await mintToken(service, email);
    return { email, token, cookie: await consoleCookie(service.walletUrl, token) };
  }
  const get = (path: string, cookie?: string) => consoleGet(service.walletUrl, path, cookie);
  const post = (path: string, fields: Record<string, string | readonly string[]>, cookie?: string, headers?: Record<string, string>) =>
    consolePost(service.walletUrl, path, fields, cookie, headers);
  const api = (path: string, token: string) => httpRequest(`${service.baseUrl}${path}`, { token });
  const auditCount = (email: string) =>
    (service.db.prepare('SELECT count(*) AS n FROM audit_events WHERE user_id = ?').get(email) as { n: number }).n;

  /** Sixteen minutes on: the session's sign-in is no longer recent. The clock comes back after `body`. */
  async function later<T>(body: () => Promise<T>): Promise<T> {
    clock.advance(SIXTEEN_MINUTES);
    try {
      return await body();
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  }

  it('shows every page to the signed-in user with the wallet headers, and the 401 page without a session', async () => {
    const { cookie, email } = await user('pages');
    for (const path of PAGES) {
      const page = await get(path, cookie);
      expect(page.status, `${path}: ${page.text}`).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.headers.get('content-security-policy')).toMatch(
        /^default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
      );
      expect(page.text).toContain(`Signed in as ${email}`);
      expect(page.text).toMatch(new RegExp(`href="${path}" aria-current="page"`));
      if (path === 'login') continue;
      const signedOut = await get(path);
      expect(signedOut.status).toBe(401);
      expect(signedOut.text).toContain('swarm-node wallet login');
      expect(signedOut.text).not.toContain('Signed in as');
    }
  });

  it("shows a run with its log, output and artifacts; another user's run, log, artifact and cancel are the same 404 as none", async () => {
    const owner = await user('owner');
    await fundWallet(service.baseUrl, owner.email, 100);
    const held = await heldRun(service.baseUrl, owner.email, owner.token);
    await held.log(['checking disk', { text: 'warning: <b>not markup</b>', stream: 'stderr' }]);
    await held.artifact('report.csv', Buffer.from('check,result\ndisk,ok\n'));

    const running = await get(`runs/${held.run.run_id}`, owner.cookie);
    expect(running.status).toBe(200);
    // The run page alone may run its one script, by hash, and connect back to this origin for the log.
    expect(running.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; style-src 'sha256-[^']+'; script-src 'sha256-[^']+' 'sha256-[^']+'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect(running.text).toContain('checking disk');
    expect(running.text).toContain('warning: &lt;b&gt;not markup&lt;/b&gt;');
    expect(running.text).toContain(`data-follow="../runs/${held.run.run_id}/log-events?after=1"`);
    expect(running.text).toContain('Cancel this run');
    const download = await fetch(`${service.walletUrl}/runs/${held.run.run_id}/artifacts/report.csv`, {
      headers: { cookie: owner.cookie },
    });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="report.csv"');
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await download.text()).toBe('check,result\ndisk,ok\n');

    const stranger = await user('stranger');
    for (const path of [
      `runs/${held.run.run_id}`,
      `runs/${held.run.run_id}/log-events`,
      `runs/${held.run.run_id}/artifacts/report.csv`,
      'runs/00000000-0000-4000-8000-000000000000',
    ]) {
      const refused = await get(path, stranger.cookie);
      expect(refused.status, path).toBe(404);
      expect(refused.text).not.toContain('checking disk');
    }
    const cancel = await post(`runs/${held.run.run_id}/cancel`, {}, stranger.cookie);
    expect(cancel.status).toBe(404);
    expect((await api(`/v1/swarm/runs/${held.run.run_id}`, owner.token)).body).toMatchObject({
      status: 'running',
      cancel_requested_at: null,
    });

    held.finish();
    await finished(service.baseUrl, owner.token, held.run.run_id);
    const done = await get(`runs/${held.run.run_id}`, owner.cookie);
    expect(done.text).toContain('all checks passed');
    expect(done.text).not.toContain('data-follow');
    expect(done.text).not.toContain('Cancel this run');
    expect(done.headers.get('content-security-policy')).not.toContain('connect-src');
    // The log followed as the page's script follows it: the same events as the API's, for the session's cookie.
    const events = await get(`runs/${held.run.run_id}/log-events?after=0`, owner.cookie);
    expect(events.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(events.headers.get('cache-control')).toBe('no-store, no-transform');
    expect(events.text).toContain('id: 1\ndata: {"seq":1,"stream":"stderr"');
    expect(events.text).not.toContain('checking disk');
    expect(events.text).toContain('event: end\ndata: {"run_id":');
    expect((await get(`runs/${held.run.run_id}/log-events?after=x`, owner.cookie)).status).toBe(400);
  });

  it("hides in a run's input the values of the secrets its agent is handed, as they are and encoded", async () => {
    const owner = await user('input-secret');
    await fundWallet(service.baseUrl, owner.email, 100);
    const value = 'sk-input-secret-7Qz9xW';
    const set = await httpRequest(`${service.baseUrl}/v1/swarm/secrets/OPENAI_API_KEY`, {
      method: 'PUT',
      token: owner.token,
      body: { value },
    });
    expect(set.status, set.text).toBe(200);
    // The agent declares OPENAI_API_KEY (its agent.json): a person who pasted the key into the input sees it hidden.
    const encoded = Buffer.from(value).toString('base64');
    const held = await heldRun(service.baseUrl, owner.email, owner.token, {
      agent: 'agent_research_rag_015',
      input: { corpus: '/srv/docs', question: `Why is ${value} refused, and ${encodeURIComponent(`${value} x`)} or ${encoded}?` },
    });
    held.finish();
    await finished(service.baseUrl, owner.token, held.run.run_id);

    const page = await get(`runs/${held.run.run_id}`, owner.cookie);
    expect(page.status).toBe(200);
    const input = /<h2 id="input-heading">Input<\/h2>\s*<pre[^>]*><code>([\s\S]*?)<\/code><\/pre>/.exec(page.text)?.[1];
    expect(input, page.text).toBeDefined();
    expect(input).toContain('&quot;corpus&quot;: &quot;/srv/docs&quot;');
    expect(input).toContain('Why is *** refused, and ***%20x or ***?');
    for (const form of [value, encodeURIComponent(value), encoded, encoded.replace(/=+$/, '')]) expect(page.text).not.toContain(form);
  });

  it('cancels a running run from its page; a run that ended says why it cannot be cancelled', async () => {
    const owner = await user('cancel');
    await fundWallet(service.baseUrl, owner.email, 100);
    const held = await heldRun(service.baseUrl, owner.email, owner.token);
    const cancelled = await post(`runs/${held.run.run_id}/cancel`, {}, owner.cookie);
    expect(cancelled.status).toBe(303);
    expect(cancelled.headers.get('location')).toBe(`../../runs/${held.run.run_id}`);
    await waitFor(async () => (held.node.cancels.includes(held.run.run_id) ? true : undefined), 'the node to be told to cancel');
    await finished(service.baseUrl, owner.token, held.run.run_id);
    expect((await api(`/v1/swarm/runs/${held.run.run_id}`, owner.token)).body).toMatchObject({ status: 'cancelled', charged_cents: 0 });
    const again = await post(`runs/${held.run.run_id}/cancel`, {}, owner.cookie);
    // A repeat of a cancel that took effect answers as the first did.
    expect(again.status).toBe(303);

    const other = await finishedRun(service.baseUrl, owner.email, owner.token);
    const refused = await post(`runs/${other.run.run_id}/cancel`, {}, owner.cookie);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toContain('already ended succeeded');
  });

  it('lists runs by agent, status and node; refuses a filter it cannot use with the form and a 400', async () => {
    const owner = await user('filter');
    await fundWallet(service.baseUrl, owner.email, 100);
    const held = await finishedRun(service.baseUrl, owner.email, owner.token);
    const all = await get('runs?agent_id=&status=&node_id=', owner.cookie);
    expect(all.status).toBe(200);
    expect(all.text).toContain(`runs/${held.run.run_id}`);
    const matching = await get(`runs?agent_id=${CONSOLE_AGENT}&status=succeeded&node_id=${held.node.node_id}`, owner.cookie);
    expect(matching.text).toContain(`runs/${held.run.run_id}`);
    expect(matching.text).toMatch(/<option value="succeeded" selected>/);
    expect((await get('runs?status=failed', owner.cookie)).text).toContain('No run matches these filters.');
    for (const query of ['status=exploded', 'cursor=not-a-cursor', `agent_id=${'a'.repeat(200)}`]) {
      const refused = await get(`runs?${query}`, owner.cookie);
      expect(refused.status, query).toBe(400);
      expect(refused.text).toContain('These filters cannot be used');
      expect(refused.text).not.toContain(`runs/${held.run.run_id}`);
    }
  });

  it('pages the runs and a webhook endpoint’s deliveries, the older pages keeping the filters', { timeout: 60_000 }, async () => {
    const owner = await user('paging');
    await fundWallet(service.baseUrl, owner.email, 500);
    const hook = await httpRequest(`${service.baseUrl}/v1/swarm/webhooks`, {
      token: owner.token,
      body: { url: 'https://hooks.invalid/paging', events: ['succeeded'] },
    });
    expect(hook.status, hook.text).toBe(201);
    const node = await nodeFor(service.baseUrl, owner.email, [CONSOLE_AGENT]);
    const runIds: string[] = [];
    for (let index = 0; index < 52; index += 1) {
      const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
        token: owner.token,
        headers: { 'idempotency-key': randomUUID() },
        body: { user_id: owner.email, agent_id: CONSOLE_AGENT },
      });
      expect(run.status, run.text).toBe(200);
      runIds.push(run.body.run_id as string);
    }
    await node.stop();
    const linked = (text: string) => runIds.filter((runId) => text.includes(`runs/${runId}"`));
    const first = await get(`runs?agent_id=${CONSOLE_AGENT}&status=succeeded&node_id=`, owner.cookie);
    expect(linked(first.text)).toHaveLength(50);
    const older = /<a href="(runs\?[^"]+)" rel="next">Older runs<\/a>/.exec(first.text)![1]!.replaceAll('&amp;', '&');
    expect(new URLSearchParams(older.slice('runs?'.length)).get('agent_id')).toBe(CONSOLE_AGENT);
    expect(older).not.toContain('node_id');
    const second = await get(older, owner.cookie);
    expect(linked(second.text).sort()).toEqual(runIds.slice(0, 2).sort());
    expect(second.text).not.toContain('Older runs');

    const deliveries = await get(`webhooks/${hook.body.endpoint_id}`, owner.cookie);
    const resendButtons = (text: string) => text.match(/<button type="submit" class="secondary">Re-send/g) ?? [];
    expect(resendButtons(deliveries.text)).toHaveLength(20);
    // Relative to the endpoint's page, /wallet/webhooks/{endpoint_id}.
    const before = /<a href="\.\.\/(webhooks\/[0-9a-f-]{36}\?before=[0-9a-f-]{36})" rel="next">/.exec(deliveries.text)![1]!;
    const next = await get(before, owner.cookie);
    expect(next.status).toBe(200);
    expect(resendButtons(next.text)).toHaveLength(20);
    expect((await get(`webhooks/${hook.body.endpoint_id}?before=nonsense`, owner.cookie)).status).toBe(400);
  });

  it('sets and removes budgets; a bad cap, agent or period is refused with the form again and changes nothing', async () => {
    const owner = await user('budgets');
    const budgets = async () =>
      (await api('/v1/swarm/budgets', owner.token)).body.budgets as Array<{ agent_id: string | null; period: string; cap_cents: number }>;
    const audited = auditCount(owner.email);
    const refusals: Array<[Record<string, string>, number, string]> = [
      [{ scope: 'all', period: 'day', cap: 'lots' }, 400, 'Enter the cap in dollars'],
      [{ scope: 'all', period: 'day', cap: '-1' }, 400, 'Enter the cap in dollars'],
      [{ scope: 'all', period: 'day', cap: '1000000.01' }, 400, 'from 0 to 100000000'],
      [{ scope: 'agent_nobody', period: 'day', cap: '5' }, 404, 'no agent'],
      [{ scope: 'all', period: 'week', cap: '5' }, 404, 'no budget period'],
    ];
    for (const [fields, status, reason] of refusals) {
      const refused = await post('budgets', fields, owner.cookie);
      expect(refused.status, JSON.stringify(fields)).toBe(status);
      expect(refused.text.toLowerCase()).toContain(reason.toLowerCase());
      expect(refused.text).toContain('Nothing was changed.');
      expect(refused.text).toContain(`value="${fields.cap}"`);
      expect(refused.text).toContain('aria-invalid="true"');
    }
    expect(await budgets()).toEqual([]);
    expect(auditCount(owner.email)).toBe(audited);

    const set = await post('budgets', { scope: CONSOLE_AGENT, period: 'month', cap: '2.50' }, owner.cookie);
    expect(set.status).toBe(303);
    expect(set.headers.get('location')).toBe('budgets');
    expect(await budgets()).toMatchObject([{ agent_id: CONSOLE_AGENT, period: 'month', cap_cents: 250 }]);
    expect((await get('budgets', owner.cookie)).text).toContain('$2.50');
    expect((await post('budgets/remove', { scope: CONSOLE_AGENT, period: 'month' }, owner.cookie)).status).toBe(303);
    expect(await budgets()).toEqual([]);
    expect((await post('budgets/remove', { scope: CONSOLE_AGENT, period: 'month' }, owner.cookie)).status).toBe(404);
  });

  it('sets and removes secrets with a recent sign-in; never shows a value; a bad name or value changes nothing', async () => {
    const owner = await user('secrets');
    const names = async () =>
      ((await api('/v1/swarm/secrets', owner.token)).body.secrets as Array<{ name: string }>).map((secret) => secret.name);
    const value = 'sk_live_CONSOLE_1234';
    const set = await post('secrets', { name: 'OPENAI_API_KEY', value: `${value}\r\n` }, owner.cookie);
    expect(set.status, set.text).toBe(303);
    expect(await names()).toEqual(['OPENAI_API_KEY']);
    const page = await get('secrets', owner.cookie);
    expect(page.text).toContain('OPENAI_API_KEY');
    expect(page.text).not.toContain(value);

    for (const [fields, reason] of [
      [{ name: 'PATH', value }, 'PATH is reserved'],
      [{ name: 'lower_case', value }, 'must be 1-64 capital letters'],
      [{ name: 'SHORT', value: 'abc' }, 'must be at least 4 characters'],
      [{ name: 'BIG', value: 'x'.repeat(16 * 1024 + 1) }, 'must be at most 16384 bytes'],
    ] as const) {
      const refused = await post('secrets', fields, owner.cookie);
      expect(refused.status, fields.name).toBe(400);
      expect(refused.text.toLowerCase()).toContain(reason.toLowerCase());
      expect(refused.text).not.toContain(fields.value);
    }
    expect(await names()).toEqual(['OPENAI_API_KEY']);
    expect((await post('secrets/remove', { name: 'NOT_MINE' }, owner.cookie)).status).toBe(404);

    // Sixteen minutes on, the session may read but not change: the API's 401 step_up_required, as a page.
    await later(async () => {
      const page = await get('secrets', owner.cookie);
      expect(page.text).toContain('Confirm it is you');
      expect(page.text).not.toContain('Set a secret');
      const refused = await post('secrets', { name: 'OTHER_KEY', value }, owner.cookie);
      expect(refused.status).toBe(401);
      expect(refused.text).toContain('Recent sign-in needed');
      expect((await post('secrets/remove', { name: 'OPENAI_API_KEY' }, owner.cookie)).status).toBe(401);
      expect(await names()).toEqual(['OPENAI_API_KEY']);

      // A code mailed to the address, typed back, renews it: a wrong one first (401, the form again), then the right one.
      const sent = await post('confirm/send', { return: 'secrets' }, owner.cookie);
      expect(sent.status).toBe(200);
      const reference = /reference <code>([0-9a-f]{8})<\/code>/.exec(sent.text)![1]!;
      const challengeId = /name="challenge_id" value="([0-9a-f-]{36})"/.exec(sent.text)![1]!;
      const code = signInCodeOf(await nextMailTo(owner.email, { match: (mail) => mail.text.includes(`reference ${reference}`) }));
      const wrong = await post('confirm', { return: 'secrets', challenge_id: challengeId, code: '0000-0000' }, owner.cookie);
      expect(wrong.status).toBe(401);
      expect(wrong.text).toContain('The sign-in code is wrong');
      expect((await post('confirm', { return: 'https://evil.example/', challenge_id: challengeId, code }, owner.cookie)).status).toBe(400);
      const right = await post('confirm', { return: 'secrets', challenge_id: challengeId, code }, owner.cookie);
      expect(right.status).toBe(303);
      expect(right.headers.get('location')).toBe('secrets');
      // The code works once.
      expect((await post('confirm', { return: 'secrets', challenge_id: challengeId, code }, owner.cookie)).status).toBe(401);
      expect((await post('secrets/remove', { name: 'OPENAI_API_KEY' }, owner.cookie)).status).toBe(303);
    });
    expect(await names()).toEqual([]);
    const kinds = service.db
      .prepare("SELECT kind, detail_json FROM audit_events WHERE user_id = ? AND kind IN ('secret_changed', 'sign_in') ORDER BY event_id")
      .all(owner.email) as Array<{ kind: string; detail_json: string }>;
    expect(kinds.map((row) => row.kind)).toEqual(['sign_in', 'secret_changed', 'sign_in', 'secret_changed']);
    expect(JSON.stringify(kinds)).not.toContain(value);
  });

  it('adds webhook endpoints showing the secret once, and removes them; a bad URL or events change nothing', async () => {
    const owner = await user('webhooks');
    const endpoints = async () =>
      (await api('/v1/swarm/webhooks', owner.token)).body.webhooks as Array<{ endpoint_id: string; url: string; events: string[] }>;
    for (const [fields, reason] of [
      [{ url: 'http://example.com/hook', events: ['succeeded'] }, 'must be an https URL'],
      [{ url: 'https://10.0.0.8/hook', events: ['succeeded'] }, 'must reach a public address'],
      [{ url: 'https://example.com/hook', events: [] }, 'choose at least one event'],
      [{ url: 'https://example.com/hook', events: ['exploded'] }, 'there is no event'],
    ] as const) {
      const refused = await post('webhooks', fields, owner.cookie);
      expect(refused.status, fields.url).toBe(400);
      expect(refused.text.toLowerCase()).toContain(reason.toLowerCase());
      expect(refused.text).toContain('Nothing was added.');
    }
    expect(await endpoints()).toEqual([]);

    const added = await post(
      'webhooks',
      { url: 'https://example.com/hook', events: ['succeeded', 'failed'], description: 'CI' },
      owner.cookie,
    );
    expect(added.status).toBe(201);
    const secret = /data-testid="signing-secret">(whsec_[A-Za-z0-9_-]+)</.exec(added.text)?.[1];
    expect(secret).toBeDefined();
    const [endpoint] = await endpoints();
    expect(endpoint).toMatchObject({ url: 'https://example.com/hook', events: ['succeeded', 'failed'] });
    expect((await get('webhooks', owner.cookie)).text).not.toContain(secret!);
    const own = await get(`webhooks/${endpoint!.endpoint_id}`, owner.cookie);
    expect(own.status).toBe(200);
    expect(own.text).toContain('None yet');

    const stranger = await user('hooks-stranger');
    expect((await get(`webhooks/${endpoint!.endpoint_id}`, stranger.cookie)).status).toBe(404);
    expect((await post(`webhooks/${endpoint!.endpoint_id}/remove`, {}, stranger.cookie)).status).toBe(404);
    expect(
      (await post(`webhooks/${endpoint!.endpoint_id}/deliveries/00000000-0000-4000-8000-000000000000/resend`, {}, stranger.cookie)).status,
    ).toBe(404);
    expect((await get('webhooks/not-an-id', owner.cookie)).status).toBe(404);
    expect(await endpoints()).toHaveLength(1);

    await later(async () => {
      expect((await post(`webhooks/${endpoint!.endpoint_id}/remove`, {}, owner.cookie)).status).toBe(401);
      expect((await post('webhooks', { url: 'https://example.org/hook', events: ['queued'] }, owner.cookie)).status).toBe(401);
    });
    expect(await endpoints()).toHaveLength(1);
    expect((await post(`webhooks/${endpoint!.endpoint_id}/remove`, {}, owner.cookie)).status).toBe(303);
    expect(await endpoints()).toEqual([]);
    // The longest URL the API takes fits the form, percent-encoded.
    const long = `https://example.com/${'%C3%A9'.repeat(338)}`;
    expect(long.length).toBeLessThanOrEqual(2048);
    expect((await post('webhooks', { url: long, events: ['queued'], description: 'é'.repeat(200) }, owner.cookie)).status).toBe(201);
  });

  it('refuses every form from another site, without a session, as JSON or oversized, and changes nothing', async () => {
    const owner = await user('forms');
    const audited = auditCount(owner.email);
    const forms: Array<[string, Record<string, string>]> = [
      ['budgets', { scope: 'all', period: 'day', cap: '1' }],
      ['secrets', { name: 'A_KEY', value: 'abcdef' }],
      ['webhooks', { url: 'https://example.com/h', events: 'queued' }],
      ['confirm/send', { return: 'secrets' }],
    ];
    for (const [path, fields] of forms) {
      expect(
        (await post(path, fields, owner.cookie, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' })).status,
        path,
      ).toBe(403);
      expect((await post(path, fields, undefined)).status, path).toBe(401);
      const json = await httpRequest(`${service.walletUrl}/${path}`, {
        method: 'POST',
        body: fields,
        headers: { cookie: owner.cookie, 'sec-fetch-site': 'same-origin' },
      });
      expect(json.status, path).toBe(415);
    }
    expect((await post('budgets', { scope: 'all', period: 'day', cap: '1', pad: 'x'.repeat(2048) }, owner.cookie)).status).toBe(413);
    expect(auditCount(owner.email)).toBe(audited);
    expect((await api('/v1/swarm/budgets', owner.token)).body.budgets).toEqual([]);
  });

  it('re-runs a run once per confirmation, only from the console, and honours the runs page’s date range', async () => {
    const owner = await user('rerun');
    await fundWallet(service.baseUrl, owner.email, 100);
    const done = await finishedRun(service.baseUrl, owner.email, owner.token);
    const confirm = await get(`runs/${done.run.run_id}/rerun`, owner.cookie);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('It costs <strong id="rerun-price">$0.04</strong>');
    const key = /name="idempotency_key" value="([0-9a-f-]{36})"/.exec(confirm.text)![1]!;
    const balance = async () => (await api('/v1/swarm/wallet', owner.token)).body.balance_cents as number;
    const before = await balance();
    const path = `runs/${done.run.run_id}/rerun`;
    expect(
      (await post(path, { idempotency_key: key }, owner.cookie, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' })).status,
    ).toBe(403);
    expect(await balance()).toBe(before);
    // Sent twice (a double click, a reload): one run, one charge.
    const first = await post(path, { idempotency_key: key }, owner.cookie);
    const second = await post(path, { idempotency_key: key }, owner.cookie);
    expect(first.status).toBe(303);
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    expect(first.headers.get('location')).not.toContain(done.run.run_id);
    expect(await balance()).toBe(before - 4);
    // What started each: the re-run known to the service as its own, whatever the browser sent; the first run's
    // execute came over HTTP without saying (docs/api.md "Triggers").
    const rerunId = /runs\/([0-9a-f-]{36})$/.exec(first.headers.get('location')!)![1]!;
    expect((await get(`runs/${rerunId}`, owner.cookie)).text).toContain('<dt>Trigger</dt><dd id="run-trigger">re-run</dd>');
    expect((await api(`/v1/swarm/runs/${rerunId}`, owner.token)).body.trigger).toBe('rerun');
    const listed = (await get('runs', owner.cookie)).text;
    expect(listed).toContain('<th scope="col">Trigger</th>');
    const rowOf = (text: string, runId: string) => new RegExp(`<tr>(?:(?!</tr>)[\\s\\S])*${runId}[\\s\\S]*?</tr>`).exec(text)?.[0] ?? '';
    expect(rowOf(listed, rerunId)).toContain('<td data-label="Trigger">re-run</td>');
    expect(rowOf(listed, done.run.run_id)).toContain('<td data-label="Trigger">API</td>');
    // A run from before the service recorded it: a dash, named for a screen reader.
    await service.ctx.store.db.updateTable('runs').set({ trigger: null }).where('run_id', '=', done.run.run_id).execute();
    const unknown = '<span aria-label="not recorded">—</span>';
    expect((await get(`runs/${done.run.run_id}`, owner.cookie)).text).toContain(`<dd id="run-trigger">${unknown}</dd>`);
    expect(rowOf((await get('runs', owner.cookie)).text, done.run.run_id)).toContain(`<td data-label="Trigger">${unknown}</td>`);

    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    expect((await get(`runs?since=${day(0)}&until=${day(0)}`, owner.cookie)).text).toContain(done.run.run_id);
    expect((await get(`runs?since=${day(1)}`, owner.cookie)).text).not.toContain(done.run.run_id);
    expect((await get(`runs?until=${day(-1)}`, owner.cookie)).text).not.toContain(done.run.run_id);
    const refused = await get('runs?since=yesterday', owner.cookie);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('since must be an ISO 8601 time');
  });

  it('shows usage per day and per agent from the ledger; a range it cannot show is a 400 with the form', async () => {
    const owner = await user('usage');
    await fundWallet(service.baseUrl, owner.email, 100);
    await finishedRun(service.baseUrl, owner.email, owner.token);
    const page = await get('usage', owner.cookie);
    expect(page.status).toBe(200);
    const report = (await api('/v1/swarm/usage', owner.token)).body;
    expect(page.text).toContain(`data-testid="usage-net">$${(report.totals.net_cents / 100).toFixed(2)}<`);
    expect(page.text).toMatch(/<svg class="chart"[^>]* role="img" aria-labelledby="chart-day-title chart-day-desc"/);
    expect(page.text).toContain('Ops monitor agent');
    for (const query of ['from=2026-02-30', 'from=2026-05-01&to=2026-04-01', 'from=2020-01-01&to=2026-01-01', 'from=yesterday']) {
      const refused = await get(`usage?${query}`, owner.cookie);
      expect(refused.status, query).toBe(400);
      expect(refused.text).toContain('The range cannot be shown');
    }
  });
});

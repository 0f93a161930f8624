// Budgets at the service (docs/api.md "Budgets"): caps per user and per agent, per UTC day and month, enforced in the
// transaction that debits, for every run however it was started (the JWT, a node's own run): over a cap, 402
// budget_exceeded with the cap, what is spent and when it resets, and nothing charged; refunds give room back; no
// interleaving of parallel executes spends past a cap.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { consoleCookie, consolePost } from '../helpers/console.js';
import { httpRequest } from '../helpers/http.js';
import { mintToken } from '../helpers/tokens.js';
import { waitFor } from '../helpers/wait.js';
import { MovableClock } from '../helpers/clock.js';
import type { Answer } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { entriesOf, execute, ledgerSnapshot, paidUser, paidUserWithNode, runsOf, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';

const REVIEW = 'agent_dev_review_012';
const MONITOR = 'agent_ops_monitor_004';
const OUTREACH = 'agent_sales_outreach_008';
const DAY_MS = 86_400_000;
const SIXTEEN_MINUTES = 16 * 60 * 1000;

describe('budgets', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock, runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);
  const call = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const cap = (token: string, scope: string, period: string, cents: number) =>
    call(`/v1/swarm/budgets/${scope}/${period}`, token, { method: 'PUT', body: { cap_cents: cents } });
  const review = (user: { email: string; token: string }, key?: string) =>
    execute(service, user.token, { user_id: user.email, agent_id: REVIEW, input: CONTRACT_INPUTS[REVIEW] }, key);
  const monitor = (user: { email: string; token: string }) => execute(service, user.token, { user_id: user.email, agent_id: MONITOR });

  it('refuses the run that would go over a cap with 402 budget_exceeded, its cap, spent and reset, charging nothing; a raised cap lets the same key run', async () => {
    const user = await paidUserWithNode(service, 1000);
    const set = await cap(user.token, REVIEW, 'day', 30);
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ agent_id: REVIEW, period: 'day', cap_cents: 30, spent_cents: 0 });
    for (let i = 0; i < 2; i += 1) expect((await review(user)).status).toBe(200);
    const before = ledgerSnapshot(service);
    const key = randomUUID();
    const refused = await review(user, key);
    expect(refused.status, refused.text).toBe(402);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const tomorrow = new Date(Math.floor(clock.now() / DAY_MS) * DAY_MS + DAY_MS).toISOString();
    expect(refused.body).toMatchObject({
      code: 'budget_exceeded',
      agent_id: REVIEW,
      period: 'day',
      cap_cents: 30,
      spent_cents: 24,
      price_cents: 12,
      resets_at: tomorrow,
    });
    // The cap that lets this run through, spent and one run: $0.36.
    expect(refused.body.remedy).toContain(`swarm-node budget set --daily 0.36 --agent ${REVIEW}`);
    expect(ledgerSnapshot(service)).toEqual(before);
    // Other agents are not held to this agent's cap.
    expect((await monitor(user)).status).toBe(200);
    expect((await call('/v1/swarm/budgets', user.token)).body.budgets).toEqual([
      expect.objectContaining({ agent_id: REVIEW, period: 'day', cap_cents: 30, spent_cents: 24, resets_at: tomorrow }),
    ]);
    // The key was not kept: once the cap allows it, the same request runs.
    expect((await cap(user.token, REVIEW, 'day', 36)).status).toBe(200);
    expect((await review(user, key)).status).toBe(200);
    expect((await review(user)).status).toBe(402);
  });

  it('holds all agents together to a cap on all, a month to its cap, and resets at the next UTC day', async () => {
    const user = await paidUserWithNode(service, 1000);
    expect((await cap(user.token, 'all', 'day', 20)).status).toBe(200);
    expect((await cap(user.token, 'all', 'month', 28)).status).toBe(200);
    expect((await review(user)).status).toBe(200);
    expect((await monitor(user)).status).toBe(200);
    const overDay = await review(user);
    expect(overDay.body).toMatchObject({ code: 'budget_exceeded', agent_id: null, period: 'day', spent_cents: 16 });
    const start = clock.now();
    const nextDay = Math.floor(start / DAY_MS) * DAY_MS + DAY_MS;
    clock.advance(nextDay - start + 1000);
    try {
      // The node is seen again at its next poll, by the moved clock.
      await waitFor(
        async () => ((await call('/v1/swarm/nodes', user.token)).body.nodes[0]?.online === true ? true : undefined),
        'the node seen after the clock moved',
      );
      const sameMonth = new Date(clock.now()).getUTCMonth() === new Date(start).getUTCMonth();
      const after = await review(user);
      if (sameMonth) {
        // The day's cap reset, the month's did not: 16 + 12 = 28 fits, one more does not.
        expect(after.status, after.text).toBe(200);
        expect((await monitor(user)).body).toMatchObject({ code: 'budget_exceeded', period: 'month', spent_cents: 28, cap_cents: 28 });
      } else {
        expect(after.status).toBe(200);
      }
    } finally {
      clock.advance(-(nextDay - start + 1000));
    }
  });

  it("a failed run's refund gives its room back; a node's own run is held to the caps as a run started with the JWT", async () => {
    const user = await paidUserWithNode(service, 1000, {
      answer: () => ({ status: 'failed', output: { error: 'exit', message: 'exit 1' } }),
    });
    expect((await cap(user.token, 'all', 'day', 12)).status).toBe(200);
    for (let i = 0; i < 3; i += 1) expect((await review(user)).body).toMatchObject({ status: 'failed', charged_cents: 0 });
    expect((await call('/v1/swarm/budgets', user.token)).body.budgets[0]).toMatchObject({ spent_cents: 0 });
    expect((await cap(user.token, 'all', 'day', 3)).status).toBe(200);
    const own = await execute(service, user.node.credential, { user_id: user.email, agent_id: MONITOR });
    expect(own.status, own.text).toBe(402);
    expect(own.body).toMatchObject({ code: 'budget_exceeded', cap_cents: 3, price_cents: 4 });
  });

  it("a cap set after runs of its period counts them; a run of the day before refunded today gives back nothing of today's", async () => {
    const held: Array<() => void> = [];
    const user = await paidUserWithNode(service, 1000, {
      answer: (run): Answer | Promise<Answer> => {
        if (run.agent_id !== OUTREACH) return { status: 'succeeded', output: {} };
        return new Promise((resolve) => held.push(() => resolve({ status: 'failed', output: { error: 'exit', message: 'exit 1' } })));
      },
    });
    // Today: a run that stays running until tomorrow, then fails (not retry-safe: lost with its lease, it fails too).
    const late = execute(service, user.token, { user_id: user.email, agent_id: OUTREACH, input: CONTRACT_INPUTS[OUTREACH] }, randomUUID(), {
      prefer: 'wait=0',
    });
    expect((await late).status).toBe(202);
    await waitFor(async () => (held.length === 1 ? true : undefined), "the node holding the day's run");
    clock.advance(DAY_MS);
    try {
      for (let i = 0; i < 2; i += 1) expect((await review(user)).status).toBe(200);
      // Set now: the new day's two runs (24 cents) count; the day before's does not.
      expect((await cap(user.token, 'all', 'day', 30)).body).toMatchObject({ cap_cents: 30, spent_cents: 24 });
      expect((await review(user)).body).toMatchObject({ code: 'budget_exceeded', spent_cents: 24 });
      held[0]!();
      await waitFor(
        async () => (runsOf(service, user.email).some((run) => run.agent_id === OUTREACH && run.status === 'failed') ? true : undefined),
        "the day before's run failed",
      );
      expect((await call('/v1/swarm/budgets', user.token)).body.budgets[0]).toMatchObject({ spent_cents: 24 });
    } finally {
      clock.advance(-DAY_MS);
    }
  });

  it('no interleaving of parallel executes spends past a cap: 60 cents, 20 runs of 12 at once, exactly 5 charged', async () => {
    const user = await paidUserWithNode(service, 10_000, { capacity: 32 });
    expect((await cap(user.token, REVIEW, 'day', 60)).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 20 }, () => review(user)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 402)).toHaveLength(15);
    const charged = runsOf(service, user.email).reduce((sum, run) => sum + run.charged_cents, 0);
    expect(charged).toBe(60);
    expect(entriesOf(service, user.email).filter((entry) => entry.kind === 'debit')).toHaveLength(5);
  });

  it('with a sign-in older than 15 minutes: a first and a lower cap are set; a raise or a removal is 401 step_up_required', async () => {
    const user = await paidUser(service, 0);
    clock.advance(SIXTEEN_MINUTES);
    try {
      // A first cap lowers the limit from none at all; then lower again, and the same figure once more.
      for (const cents of [500, 300, 300]) expect((await cap(user.token, 'all', 'day', cents)).body).toMatchObject({ cap_cents: cents });
      expect((await cap(user.token, REVIEW, 'month', 1000)).status).toBe(200);
      const before = await call('/v1/swarm/budgets', user.token);
      const refusals = [
        await cap(user.token, 'all', 'day', 301),
        await cap(user.token, 'all', 'day', 100_000_000),
        await call('/v1/swarm/budgets/all/day', user.token, { method: 'DELETE' }),
        await call(`/v1/swarm/budgets/${REVIEW}/month`, user.token, { method: 'DELETE' }),
      ];
      for (const refused of refusals) {
        expect(refused.status, refused.text).toBe(401);
        const remedy = `Sign in again with the code mailed to you: swarm-node login --email ${user.email}; then retry.`;
        expect(refused.body).toMatchObject({ code: 'step_up_required', max_age: 900, remedy });
        expect(refused.body.detail).toMatch(/raises a spending limit/);
        expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer error="insufficient_user_authentication"/);
      }
      expect((await call('/v1/swarm/budgets', user.token)).body).toEqual(before.body);
      // Lowering still works with the old token: a user under attack cuts spending with whatever token they have.
      expect((await cap(user.token, 'all', 'day', 0)).body).toMatchObject({ cap_cents: 0 });
      // A fresh sign-in raises and removes.
      const { token } = await mintToken(service, user.email);
      expect((await cap(token, 'all', 'day', 5000)).body).toMatchObject({ cap_cents: 5000 });
      expect((await call('/v1/swarm/budgets/all/day', token, { method: 'DELETE' })).status).toBe(200);
      const changes = (await call('/v1/audit', token)).body.events.filter((event: { kind: string }) => event.kind === 'budget_changed');
      const caps = changes.map((event: { detail: { cap_cents: number | null } }) => event.detail.cap_cents);
      expect(caps).toEqual([null, 5000, 0, 1000, 300, 300, 500]);
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it('in the console, with a session older than 15 minutes: lowering is taken, raising and removing offer to confirm by mail', async () => {
    const user = await paidUser(service, 0);
    expect((await cap(user.token, 'all', 'day', 500)).status).toBe(200);
    const cookie = await consoleCookie(service.walletUrl, user.token);
    clock.advance(SIXTEEN_MINUTES);
    try {
      const lowered = await consolePost(service.walletUrl, 'budgets', { scope: 'all', period: 'day', cap: '4' }, cookie);
      expect(lowered.status, lowered.text).toBe(303);
      const raised = await consolePost(service.walletUrl, 'budgets', { scope: 'all', period: 'day', cap: '1000000' }, cookie);
      const removed = await consolePost(service.walletUrl, 'budgets/remove', { scope: 'all', period: 'day' }, cookie);
      for (const page of [raised, removed]) {
        expect(page.status, page.text).toBe(401);
        expect(page.text).toMatch(/This raises a spending limit/);
        expect(page.text).toContain('name="return" value="budgets"');
      }
      expect((await call('/v1/swarm/budgets', user.token)).body.budgets).toEqual([expect.objectContaining({ cap_cents: 400 })]);
      // The panel's button: a code mailed, and the form for it leads back here.
      const confirm = await consolePost(service.walletUrl, 'confirm/send', { return: 'budgets' }, cookie);
      expect(confirm.status, confirm.text).toBe(200);
      expect(confirm.text).toContain('name="return" value="budgets"');
    } finally {
      clock.advance(-SIXTEEN_MINUTES);
    }
  });

  it('refuses bad caps, periods, agents and credentials with problem+json; another user never sees or removes a cap', async () => {
    const owner = await paidUserWithNode(service, 100);
    const other = await paidUser(service, 0);
    expect((await cap(owner.token, 'all', 'day', 100)).status).toBe(200);
    const refusals: Array<[ReturnType<typeof cap>, number, string]> = [
      [cap(owner.token, 'all', 'week', 100), 404, 'not_found'],
      [cap(owner.token, 'agent_nobody_000', 'day', 100), 404, 'agent_not_found'],
      [cap(owner.token, 'all', 'day', -1), 400, 'invalid_request'],
      [cap(owner.token, 'all', 'day', 1.5), 400, 'invalid_request'],
      [cap(owner.token, 'all', 'day', 100_000_001), 400, 'invalid_request'],
      [call('/v1/swarm/budgets/all/day', owner.token, { method: 'PUT', body: { cap_cents: '100' } }), 400, 'invalid_request'],
      [call('/v1/swarm/budgets/all/day', owner.token, { method: 'PUT', body: { cap_cents: 100, scope: 'x' } }), 400, 'invalid_request'],
      [cap(owner.node.credential, 'all', 'day', 1000), 401, 'unauthorized'],
      [call('/v1/swarm/budgets/all/month', owner.token, { method: 'DELETE' }), 404, 'not_found'],
      [call('/v1/swarm/budgets/all/day', other.token, { method: 'DELETE' }), 404, 'not_found'],
    ];
    for (const [pending, status, code] of refusals) {
      const response = await pending;
      expect(response.status, response.text).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.body.code).toBe(code);
    }
    expect((await call('/v1/swarm/budgets', other.token)).body).toEqual({ budgets: [] });
    expect((await call('/v1/swarm/budgets', owner.token)).body.budgets).toEqual([
      expect.objectContaining({ agent_id: null, period: 'day', cap_cents: 100 }),
    ]);
    const removed = await call('/v1/swarm/budgets/all/day', owner.token, { method: 'DELETE' });
    expect(removed.body).toEqual({ agent_id: null, period: 'day', removed: true });
    const kinds = (await call('/v1/audit', owner.token)).body.events.filter((event: { kind: string }) => event.kind === 'budget_changed');
    expect(kinds.map((event: { detail: unknown }) => event.detail)).toEqual([
      { agent_id: null, period: 'day', cap_cents: null },
      { agent_id: null, period: 'day', cap_cents: 100 },
    ]);
  });
});

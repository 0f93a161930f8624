// GET /v1/swarm/usage (docs/api.md "Usage"): what the user's runs cost, by day, agent and node, equal to the ledger to
// the cent (refunds included), and to what the budgets count for the same day.
import { afterAll, describe, expect, it } from 'vitest';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { enrollNode, serve } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { CONTRACT_INPUTS } from '../helpers/bundles.js';
import { execute, paidUser, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';

const REVIEW = 'agent_dev_review_012';
const MONITOR = 'agent_ops_monitor_004';
const DAY_MS = 86_400_000;
const dateOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

describe('GET /v1/swarm/usage', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock, runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);
  const usage = (token: string, query = '') => httpRequest(`${service.baseUrl}/v1/swarm/usage${query}`, { token });

  it('groups by day, agent and node, refunds included, and its totals equal the ledger to the cent', async () => {
    const user = await paidUser(service, 10_000);
    // Two nodes: one answers, one fails every run (each failure refunded).
    const good = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [REVIEW, MONITOR] });
    const run = async (agent: string) => {
      const response = await execute(service, user.token, {
        user_id: user.email,
        agent_id: agent,
        node_id: good.node_id,
        ...(agent === REVIEW ? { input: CONTRACT_INPUTS[REVIEW] } : {}),
      });
      expect(response.status, response.text).toBe(200);
    };
    const bad = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
      agents: [MONITOR],
      answer: () => ({ status: 'failed', output: { error: 'exit', message: 'exit 3' } }),
    });
    const failing = async () =>
      expect((await execute(service, user.token, { user_id: user.email, agent_id: MONITOR, node_id: bad.node_id })).body.status).toBe(
        'failed',
      );
    const day1 = clock.now();
    await run(REVIEW);
    await run(REVIEW);
    await run(MONITOR);
    await failing();
    // The next UTC day: the nodes are seen again at their next polls, by the moved clock.
    const shift = Math.floor(day1 / DAY_MS) * DAY_MS + DAY_MS + 60_000 - day1;
    clock.advance(shift);
    try {
      await waitFor(
        async () =>
          (await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token: user.token })).body.nodes.every(
            (node: { online: boolean }) => node.online,
          )
            ? true
            : undefined,
        'both nodes seen',
      );
      await run(MONITOR);
      await failing();
      await failing();
      const day2 = clock.now();
      const answer = await usage(user.token, `?from=${dateOf(day1)}&to=${dateOf(day2)}`);
      expect(answer.status, answer.text).toBe(200);
      const body = answer.body;
      expect(body.totals).toEqual({ runs: 7, charged_cents: 12 + 12 + 4 + 4 + 4 + 4 + 4, refunded_cents: 12, net_cents: 32 });
      // The ledger's own sum, entry by entry.
      const ledger = service.db
        .prepare("SELECT kind, amount_cents FROM ledger_entries WHERE user_id = ? AND kind IN ('debit', 'refund')")
        .all(user.email) as Array<{ kind: string; amount_cents: number }>;
      const net = ledger.reduce((sum, entry) => sum + (entry.kind === 'debit' ? entry.amount_cents : -entry.amount_cents), 0);
      expect(body.totals.net_cents).toBe(net);
      expect(body.days).toEqual([
        { date: dateOf(day1), runs: 4, charged_cents: 32, refunded_cents: 4, net_cents: 28 },
        { date: dateOf(day2), runs: 3, charged_cents: 12, refunded_cents: 8, net_cents: 4 },
      ]);
      expect(body.by_agent).toEqual([
        { agent_id: REVIEW, runs: 2, charged_cents: 24, refunded_cents: 0, net_cents: 24 },
        { agent_id: MONITOR, runs: 5, charged_cents: 20, refunded_cents: 12, net_cents: 8 },
      ]);
      expect(body.by_node).toEqual([
        { node_id: good.node_id, runs: 4, charged_cents: 32, refunded_cents: 0, net_cents: 32 },
        { node_id: bad.node_id, runs: 3, charged_cents: 12, refunded_cents: 12, net_cents: 0 },
      ]);
      const rowsTotal = body.rows.reduce((sum: number, row: { net_cents: number }) => sum + row.net_cents, 0);
      expect(rowsTotal).toBe(net);
      // A budget of today counts the same cents as today's usage.
      expect(
        (await httpRequest(`${service.baseUrl}/v1/swarm/budgets/all/day`, { method: 'PUT', token: user.token, body: { cap_cents: 1000 } }))
          .body.spent_cents,
      ).toBe(4);
      // One day alone, and the default range (the last 30 days up to today).
      expect((await usage(user.token, `?from=${dateOf(day1)}&to=${dateOf(day1)}`)).body.totals.net_cents).toBe(28);
      const recent = (await usage(user.token)).body;
      expect(recent.days).toHaveLength(30);
      expect(recent.to).toBe(dateOf(day2));
      expect(recent.totals.net_cents).toBe(32);
    } finally {
      clock.advance(-shift);
    }
  });

  it("refuses dates that are not days, a reversed or too long range, and shows another user's runs to no one", async () => {
    const user = await paidUser(service, 0);
    for (const query of [
      '?from=2025-13-01',
      '?to=yesterday',
      '?from=2025-02-30',
      '?from=2025-03-02&to=2025-03-01',
      '?from=2024-01-01&to=2025-01-02',
      '?from=2025-01-01T00:00:00Z',
    ]) {
      const refused = await usage(user.token, query);
      expect(refused.status, query).toBe(400);
      expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(refused.body.code).toBe('invalid_request');
    }
    expect((await usage(user.token, '?from=2024-01-01&to=2024-12-31')).status).toBe(200);
    expect((await usage(user.token)).body.totals).toEqual({ runs: 0, charged_cents: 0, refunded_cents: 0, net_cents: 0 });
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/usage`)).status).toBe(401);
  });
});

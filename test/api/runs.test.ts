// docs/api.md "Runs on the node": the service dispatches, a node runs and reports, billing stays exactly once. The
// node here is the test's own protocol peer (test/helpers/protocol-node.ts), so each step happens when the test says.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../helpers/svc-api.js';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, type Answer } from '../helpers/protocol-node.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { StoppedClock } from '../helpers/clock.js';
import { removeTempDirs } from '../helpers/temp.js';
import { failed } from '../../src/api/runs/finish-run.js';
import { createRuns } from '../../src/api/runs/runs.js';
import { TEST_RUN_TIMING, entriesOf, execute, ledgerSnapshot, paidUser, paidUserWithNode, runsOf, stopNodes } from './execute-fixtures.js';

/** An answer the test gives when it wants to: the run stays held (its lease renewed by the node's polls) until then. */
function gate(): { answer: (run: AssignedRun) => Promise<Answer>; started: AssignedRun[]; release: (answer?: Answer) => void } {
  const started: AssignedRun[] = [];
  const waiting: Array<(answer: Answer) => void> = [];
  return {
    started,
    answer: (run) => {
      started.push(run);
      return new Promise((resolve) => waiting.push(resolve));
    },
    release: (answer = { status: 'succeeded', output: { gated: true } }) => {
      for (const resolve of waiting.splice(0)) resolve(answer);
    },
  };
}

/** The charge invariant: what the ledger kept equals the prices of the runs a node reported as succeeded. */
function expectChargedEqualsSucceeded(service: TestService, email: string): void {
  const kept = entriesOf(service, email).reduce(
    (sum, entry) => sum + (entry.kind === 'debit' ? entry.amount_cents : entry.kind === 'refund' ? -entry.amount_cents : 0),
    0,
  );
  const succeeded = runsOf(service, email)
    .filter((run) => run.status === 'succeeded')
    .reduce((sum, run) => sum + run.charged_cents, 0);
  expect(kept).toBe(succeeded);
}

describe('runs on the node', () => {
  let service: TestService;
  const api = (path: string, init: Parameters<typeof httpRequest>[1] = {}) => httpRequest(`${service.baseUrl}${path}`, init);

  beforeAll(async () => {
    service = await startSvcApi({ runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

  describe('no node to run it: 409 no_node_available, nothing charged, the key not kept', () => {
    it('says why: no node at all, none serving the agent, or the one named is offline or not serving', async () => {
      const user = await paidUser(service, 100);
      const before = ledgerSnapshot(service);
      const none = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' });
      expect(none.status).toBe(409);
      expect(none.body).toMatchObject({
        code: 'no_node_available',
        agent_id: 'agent_ops_monitor_004',
        remedy: expect.stringContaining('swarm-node'),
      });
      expect(none.body.detail).toContain('you have no node');
      const enrolled = await enrollNode(service.baseUrl, user.email);
      const serving = await serve(service.baseUrl, enrolled, { agents: ['agent_dev_review_012'] });
      const other = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' });
      expect(other.body.detail).toContain('none of your nodes serves agent_ops_monitor_004');
      const pinned = await execute(service, user.token, {
        user_id: user.email,
        agent_id: 'agent_ops_monitor_004',
        node_id: enrolled.node_id,
      });
      expect(pinned.body.detail).toContain(`node ${enrolled.node_id} does not serve agent_ops_monitor_004`);
      await serving.stop();
      await waitFor(
        async () => ((await api('/v1/swarm/nodes', { token: user.token })).body.nodes[0].online ? undefined : true),
        'the node offline',
      );
      // Offline, it could come back: only a run that may not wait (queue_seconds 0) is refused for it.
      const offline = await execute(service, user.token, {
        user_id: user.email,
        agent_id: 'agent_dev_review_012',
        input: { repo: '/srv/app' },
        queue_seconds: 0,
      });
      expect(offline.status).toBe(409);
      expect(offline.body.detail).toContain(
        'your nodes that serve agent_dev_review_012 are offline, and queue_seconds 0 asked not to wait for one',
      );
      expect(ledgerSnapshot(service)).toEqual(before);
    });

    it('the same key runs once a node is there', async () => {
      const user = await paidUser(service, 50);
      const key = randomUUID();
      const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
      expect((await execute(service, user.token, body, key)).status).toBe(409);
      await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: ['agent_ops_monitor_004'] }).then((node) =>
        nodes.push(node),
      );
      const ran = await execute(service, user.token, body, key);
      expect(ran.status, ran.text).toBe(200);
      expect(ran.body).toMatchObject({ status: 'succeeded', charged_cents: 4, balance_cents: 46 });
    });
  });

  const nodes: Array<{ stop(): Promise<void> }> = [];
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
  });

  it('an ephemeral node is leased exactly one run, even when two polls race with more queued; killed mid-run, it is refunded and told to retire, and removes itself', async () => {
    const user = await paidUser(service, 100);
    const node = await enrollNode(service.baseUrl, user.email, { ephemeral: true });
    const call = (method: string, path: string, body?: unknown) =>
      api(path, { method, token: node.credential, ...(body === undefined ? {} : { body }) });
    const poll = (capacity: number, running: string[] = []) =>
      call('POST', '/v1/swarm/nodes/poll', { hostname: 'eph', version: 'test', capacity, running, wait_seconds: 0 });
    expect((await call('PUT', '/v1/swarm/nodes/self/agents/agent_ops_monitor_004')).status).toBe(200);
    expect((await poll(0)).status).toBe(200);
    const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
    const queued = [
      await execute(service, user.token, body, randomUUID(), { prefer: 'wait=0' }),
      await execute(service, user.token, body, randomUUID(), { prefer: 'wait=0' }),
    ];
    expect(queued.map((response) => response.status)).toEqual([202, 202]);

    const raced = await Promise.all([poll(2), poll(2)]);
    const leased = raced.flatMap((answer) => answer.body.runs as AssignedRun[]);
    expect(leased).toHaveLength(1);
    const run = leased[0]!;
    // Its own run would be a second one: refused, nothing charged.
    const own = await execute(service, node.credential, body);
    expect(own.status, own.text).toBe(409);
    expect(own.body.code).toBe('ephemeral_node_used');
    const pinned = await execute(service, user.token, { ...body, node_id: node.node_id });
    expect(pinned.status, pinned.text).toBe(409);
    expect(pinned.body.detail).toContain(`node ${node.node_id} is ephemeral and has had its one run`);
    // The other run goes to no ephemeral node: with no other node of the user, it is failed and refunded.
    const other = queued.find((response) => response.body.run_id !== run.run_id)!.body.run_id as string;
    await waitFor(
      async () => (runsOf(service, user.email).find((row) => row.run_id === other)?.status === 'failed' ? true : undefined),
      'the other run failed',
    );
    expect((await api('/v1/swarm/nodes', { token: user.token })).body.nodes).toEqual([
      expect.objectContaining({ node_id: node.node_id, ephemeral: true }),
    ]);

    // While it holds its run (this poll renews the lease), no other run and no retirement.
    const holding = await poll(2, [run.run_id]);
    expect(holding.body).toMatchObject({ runs: [], lost: [] });
    expect(holding.body.retire).toBeUndefined();
    // Killed mid-run: the lease runs out, the run is refunded (node_lost), and the node, started again (it lists no
    // run), is told to retire rather than take another.
    await waitFor(
      async () => (runsOf(service, user.email).find((row) => row.run_id === run.run_id)?.status === 'failed' ? true : undefined),
      'its run lost',
    );
    expect((await poll(2)).body).toMatchObject({ runs: [], retire: true });
    const late = await call('POST', `/v1/swarm/runs/${run.run_id}/result`, {
      lease_id: run.lease_id,
      status: 'succeeded',
      output: { ok: true },
    });
    expect(late.body.code).toBe('lease_lost');
    const removed = await call('DELETE', '/v1/swarm/nodes/self');
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toMatchObject({ node_id: node.node_id, agents_withdrawn: ['agent_ops_monitor_004'] });
    expect((await poll(2)).body.code).toBe('node_removed');
    expect((await call('DELETE', '/v1/swarm/nodes/self')).body.code).toBe('node_removed');
    expect((await api('/v1/swarm/nodes', { token: user.token })).body.nodes).toEqual([]);
    expect(runsOf(service, user.email).map((row) => row.status)).toEqual(['failed', 'failed']);
    expectChargedEqualsSucceeded(service, user.email);
  });

  it('a poll takes at most its capacity, oldest first, under one lease; the rest wait for the next poll; run ids are time-ordered', async () => {
    const user = await paidUser(service, 100);
    const node = await enrollNode(service.baseUrl, user.email);
    const call = (method: string, path: string, body?: unknown) =>
      api(path, { method, token: node.credential, ...(body === undefined ? {} : { body }) });
    const poll = (capacity: number) =>
      call('POST', '/v1/swarm/nodes/poll', { hostname: 'cap', version: 'test', capacity, running: [], wait_seconds: 0 });
    expect((await call('PUT', '/v1/swarm/nodes/self/agents/agent_ops_monitor_004')).status).toBe(200);
    expect((await poll(0)).status).toBe(200);
    const queued: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const response = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, randomUUID(), {
        prefer: 'wait=0',
      });
      expect(response.status, response.text).toBe(202);
      queued.push(response.body.run_id as string);
    }
    const first = (await poll(2)).body.runs as AssignedRun[];
    expect(first).toHaveLength(2);
    expect(new Set(first.map((run) => run.lease_id)).size).toBe(1);
    const second = (await poll(2)).body.runs as AssignedRun[];
    expect(second).toHaveLength(1);
    expect([...first, ...second].map((run) => run.run_id).sort()).toEqual([...queued].sort());
    // Oldest first: no run handed out by the first poll was queued after the one left for the second.
    const rows = service.db.prepare('SELECT run_id, started_at FROM runs WHERE user_id = ?').all(user.email) as Array<{
      run_id: string;
      started_at: number;
    }>;
    const startedAt = new Map(rows.map((row) => [row.run_id, Number(row.started_at)]));
    for (const run of first) expect(startedAt.get(run.run_id)!).toBeLessThanOrEqual(startedAt.get(second[0]!.run_id)!);
    // Run ids are time-ordered (UUID version 7): their first 48 bits are the millisecond the run started.
    for (const runId of queued) {
      expect(runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(Number.parseInt(runId.replaceAll('-', '').slice(0, 12), 16)).toBe(startedAt.get(runId));
    }
    expect((await poll(2)).body.runs).toEqual([]);
  });

  it("routes the run to the user's node with its input, and answers with that node's output and node_id", async () => {
    const user = await paidUserWithNode(service, 100, { agents: ['agent_research_rag_015'] });
    const input = { corpus: '/srv/notes', question: 'what changed?' };
    const response = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_research_rag_015', input });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toMatchObject({ status: 'succeeded', charged_cents: 15, balance_cents: 85, node_id: user.node.node_id });
    expect(user.node.received.at(-1)).toMatchObject({ agent_id: 'agent_research_rag_015', user_id: user.email, input });
    expect(response.body.output.input).toEqual(input);
  });

  it('a failure the node reports is refunded: 200 status failed, charged 0, its reason in output', async () => {
    const user = await paidUserWithNode(service, 20, {
      answer: () => ({ status: 'failed', output: { error: 'exit', message: 'the agent exited with code 3' } }),
    });
    const response = await execute(service, user.token, {
      user_id: user.email,
      agent_id: 'agent_dev_review_012',
      input: { repo: '/srv/app' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: 'failed',
      charged_cents: 0,
      balance_cents: 20,
      output: { error: 'exit', message: 'the agent exited with code 3' },
    });
    expectChargedEqualsSucceeded(service, user.email);
  });

  it('answers 202 when the node takes longer than the wait; GET follows the run, and the key replays its final answer', async () => {
    const slow = gate();
    const user = await paidUserWithNode(service, 50, { answer: slow.answer });
    const key = randomUUID();
    const body = { user_id: user.email, agent_id: 'agent_svc_skills_005', input: { question: 'What is a node?' } };
    const accepted = await execute(service, user.token, body, key, { prefer: 'wait=0' });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({
      status: expect.stringMatching(/^(queued|running)$/),
      charged_cents: 5,
      balance_cents: 45,
      output: null,
      finished_at: null,
    });
    expect(accepted.headers.get('location')).toBe(`/v1/swarm/runs/${accepted.body.run_id}`);
    const runId = accepted.body.run_id as string;
    await waitFor(async () => (slow.started.length > 0 ? true : undefined), 'the node to take the run');
    const running = await api(`/v1/swarm/runs/${runId}`, { token: user.token });
    expect(running.body).toMatchObject({ status: 'running', node_id: user.node.node_id });
    expect(running.body).not.toHaveProperty('lease');
    // A replay of the key while it runs: the same run, never a second one.
    const replay = await execute(service, user.token, body, key, { prefer: 'respond-async' });
    expect(replay.status).toBe(202);
    expect(replay.body.run_id).toBe(runId);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const followed = api(`/v1/swarm/runs/${runId}?wait=10`, { token: user.token });
    slow.release({ status: 'succeeded', output: { done: 'late' } });
    const final = await followed;
    expect(final.status).toBe(200);
    expect(final.body).toMatchObject({ run_id: runId, status: 'succeeded', charged_cents: 5, output: { done: 'late' } });
    const replayed = await execute(service, user.token, body, key);
    expect(replayed.status).toBe(200);
    // The run as it ended, byte for byte each time the key is replayed; GET adds its attempts and links to it.
    expect((await execute(service, user.token, body, key)).text).toBe(replayed.text);
    const { attempts, links, ...shown } = final.body;
    expect(replayed.body).toEqual(shown);
    expect(attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'succeeded' })]);
    expect(links).toEqual({ logs: `/v1/swarm/runs/${runId}/logs`, artifacts: `/v1/swarm/runs/${runId}/artifacts` });
    expect(runsOf(service, user.email)).toHaveLength(1);
  });

  it('records what started each run: the Svc-Run-Trigger header checked strictly, schedule from a node only, none as api', async () => {
    const user = await paidUserWithNode(service, 100);
    const body = { user_id: user.email, agent_id: 'agent_ops_monitor_004' };
    const async = { prefer: 'respond-async' };
    const bare = await execute(service, user.token, body, randomUUID(), async);
    expect(bare.status, bare.text).toBe(202);
    expect(bare.body.trigger).toBe('api');
    const manual = await execute(service, user.token, body, randomUUID(), { ...async, 'svc-run-trigger': 'manual' });
    expect(manual.body.trigger).toBe('manual');
    // The node's own run, with its credential: the daemon's schedule says so.
    const scheduled = await execute(service, user.node.credential, body, randomUUID(), { ...async, 'svc-run-trigger': 'schedule' });
    expect(scheduled.status, scheduled.text).toBe(202);
    expect(scheduled.body.trigger).toBe('schedule');

    // Refused before anything is kept: no run, no charge (the runs above finish meanwhile, so only these are counted).
    const before = { runs: runsOf(service, user.email).length, debits: entriesOf(service, user.email).length };
    for (const [token, value, message] of [
      [user.token, 'schedule', 'schedule comes with a node credential only'],
      [user.token, 'rerun', 'must be manual or schedule, not "rerun"'],
      [user.node.credential, 'Manual', 'must be manual or schedule, not "Manual"'],
      [user.token, '', 'must be manual or schedule, not ""'],
    ] as const) {
      const refused = await execute(service, token, body, randomUUID(), { 'svc-run-trigger': value });
      expect(refused.status, value).toBe(400);
      expect(refused.body).toMatchObject({ code: 'invalid_request', detail: expect.stringContaining(message) });
      expect(refused.body.remedy).toContain('svc-run-trigger');
    }
    expect({ runs: runsOf(service, user.email).length, debits: entriesOf(service, user.email).length }).toEqual(before);

    const shown = await api(`/v1/swarm/runs/${scheduled.body.run_id}`, { token: user.token });
    expect(shown.body.trigger).toBe('schedule');
    const listed = await api('/v1/swarm/runs', { token: user.token });
    const triggerOf = (runs: Array<{ run_id: string; trigger?: string }>, runId: string) =>
      runs.find((run) => run.run_id === runId)?.trigger;
    expect([bare, manual, scheduled].map((run) => triggerOf(listed.body.runs, run.body.run_id))).toEqual(['api', 'manual', 'schedule']);
    // A run from before the service recorded it: no trigger in the history.
    await service.ctx.store.db.updateTable('runs').set({ trigger: null }).where('run_id', '=', bare.body.run_id).execute();
    const again = await api('/v1/swarm/runs', { token: user.token });
    expect(again.body.runs.find((run: { run_id: string }) => run.run_id === bare.body.run_id)).not.toHaveProperty('trigger');
  });

  it("another user's run is not found, and neither is an unknown one", async () => {
    const owner = await paidUserWithNode(service, 20);
    const stranger = await paidUser(service, 0);
    const run = await execute(service, owner.token, { user_id: owner.email, agent_id: 'agent_ops_monitor_004' });
    for (const runId of [run.body.run_id, randomUUID()]) {
      const seen = await api(`/v1/swarm/runs/${runId}`, { token: stranger.token });
      expect(seen.status).toBe(404);
      expect(seen.body.code).toBe('run_not_found');
    }
  });

  describe('exactly-once billing across node loss', () => {
    it('a node gone mid-run loses its lease: failed node_lost, refunded once; its late result is refused', async () => {
      const held = gate();
      const user = await paidUserWithNode(service, 30, { answer: held.answer });
      // Outreach is not retry-safe (its mail must not go twice): a run lost with its node ends, it does not run again.
      const accepted = await execute(
        service,
        user.token,
        { user_id: user.email, agent_id: 'agent_sales_outreach_008', input: { leads: '/srv/leads.csv', template: 'Hello' } },
        randomUUID(),
        { prefer: 'wait=0' },
      );
      await waitFor(async () => (held.started.length > 0 ? true : undefined), 'the node to take the run');
      const lease = held.started[0]!;
      await user.node.stop();
      const lost = await api(`/v1/swarm/runs/${accepted.body.run_id}?wait=30`, { token: user.token });
      expect(lost.body).toMatchObject({ status: 'failed', charged_cents: 0, balance_cents: 30, output: { error: 'node_lost' } });
      const late = await api(`/v1/swarm/runs/${lease.run_id}/result`, {
        token: user.node.credential,
        body: { lease_id: lease.lease_id, status: 'succeeded', output: { late: true } },
      });
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ code: 'lease_lost', run_status: 'failed' });
      expect(entriesOf(service, user.email).map((entry) => entry.kind)).toEqual(['credit', 'debit', 'refund']);
      expectChargedEqualsSucceeded(service, user.email);
      // The service ended that run, not the node: it is not among the runs the node finished today.
      const listed = await api('/v1/swarm/nodes', { token: user.token });
      expect(listed.body.nodes).toEqual([expect.objectContaining({ node_id: user.node.node_id, runs_today: 0 })]);
    });

    it('a run longer than the lease finishes: the polls of the node renew it', async () => {
      const slow = gate();
      const user = await paidUserWithNode(service, 20, { answer: slow.answer });
      const accepted = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, randomUUID(), {
        prefer: 'wait=0',
      });
      await waitFor(async () => (slow.started.length > 0 ? true : undefined), 'the node to take the run');
      const leaseEnd = service.db.prepare('SELECT lease_expires_at FROM runs WHERE run_id = ?').pluck().get(accepted.body.run_id) as number;
      // Held past the lease it got: only renewals keep it.
      await waitFor(
        async () =>
          (service.db.prepare('SELECT lease_expires_at FROM runs WHERE run_id = ?').pluck().get(accepted.body.run_id) as number) >
          leaseEnd + TEST_RUN_TIMING.leaseMs
            ? true
            : undefined,
        'two renewals',
      );
      slow.release();
      const final = await api(`/v1/swarm/runs/${accepted.body.run_id}?wait=10`, { token: user.token });
      expect(final.body).toMatchObject({ status: 'succeeded', charged_cents: 4 });
    });

    it('the sweep ends a run only as it read it: a lease renewed since, or a claim since, keeps the run', async () => {
      const held = gate();
      const user = await paidUserWithNode(service, 20, { answer: held.answer });
      await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, randomUUID(), { prefer: 'wait=0' });
      await waitFor(async () => (held.started.length > 0 ? true : undefined), 'the node to take the run');
      const run = held.started[0]!;
      // What a sweep decided on an older read: the lease out, the run still queued. Checked under the row's lock,
      // neither holds any more (the node renews it; it was claimed), so neither ends it.
      const { finish } = createRuns(service.ctx);
      expect(await finish(run.run_id, failed('node_lost', 'swept on an old read'), { kind: 'lease_out', lease_id: run.lease_id })).toEqual({
        kind: 'not_held',
      });
      expect(await finish(run.run_id, failed('not_picked_up', 'swept on an old read'), { kind: 'queued', attempt: 1 })).toEqual({
        kind: 'not_held',
      });
      expect(runsOf(service, user.email).map((row) => row.status)).toEqual(['running']);
      held.release();
      const final = await api(`/v1/swarm/runs/${run.run_id}?wait=10`, { token: user.token });
      expect(final.body).toMatchObject({ status: 'succeeded', charged_cents: 4, attempt: 1 });
      expect(entriesOf(service, user.email).map((entry) => entry.kind)).toEqual(['credit', 'debit']);
    });

    it('a run its node hands back not_started runs again, even one that is not retry-safe, charged once', async () => {
      let handedBack = false;
      const answer = (run: AssignedRun): Answer => {
        if (handedBack) return { status: 'succeeded', output: { run_id: run.run_id } };
        handedBack = true;
        return {
          status: 'failed',
          output: { error: 'not_started', message: 'the lease had run out before the node could start the agent' },
        };
      };
      const user = await paidUserWithNode(service, 20, { answer });
      // Outreach is not retry-safe: a run lost with its node ends; one whose agent never started may still run.
      const accepted = await execute(
        service,
        user.token,
        { user_id: user.email, agent_id: 'agent_sales_outreach_008', input: { leads: '/srv/leads.csv', template: 'Hello' } },
        randomUUID(),
        { prefer: 'wait=0' },
      );
      const final = await api(`/v1/swarm/runs/${accepted.body.run_id}?wait=10`, { token: user.token });
      expect(final.body).toMatchObject({ status: 'succeeded', charged_cents: 8, attempt: 2 });
      expect(final.body.attempts.map((attempt: { outcome: string }) => attempt.outcome)).toEqual(['not_started', 'succeeded']);
      expect(entriesOf(service, user.email).map((entry) => entry.kind)).toEqual(['credit', 'debit']);
    });

    it('a second identical result is acknowledged with no second effect; a wrong lease or another node is refused', async () => {
      const held = gate();
      const user = await paidUserWithNode(service, 20, { answer: held.answer });
      await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, randomUUID(), { prefer: 'wait=0' });
      await waitFor(async () => (held.started.length > 0 ? true : undefined), 'the node to take the run');
      const run = held.started[0]!;
      const result = (lease_id: string, token = user.node.credential) =>
        api(`/v1/swarm/runs/${run.run_id}/result`, { token, body: { lease_id, status: 'succeeded', output: { by: 'hand' } } });
      const other = await enrollNode(service.baseUrl, user.email);
      expect((await result(run.lease_id, other.credential)).status).toBe(409);
      expect((await result('not-the-lease')).status).toBe(409);
      const stranger = await enrollNode(service.baseUrl, (await paidUser(service, 0)).email);
      expect((await result(run.lease_id, stranger.credential)).status).toBe(404);
      const first = await result(run.lease_id);
      expect(first.status, first.text).toBe(200);
      const before = ledgerSnapshot(service);
      const again = await result(run.lease_id);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ run_id: run.run_id, status: 'succeeded', output: { by: 'hand' } });
      expect(ledgerSnapshot(service)).toEqual(before);
      held.release();
    });

    it('many runs, one node killed halfway: charged cents equal the prices of the runs a node reported succeeded', async () => {
      let answered = 0;
      const flaky = gate();
      const user = await paidUserWithNode(service, 200, {
        capacity: 8,
        answer: (run) => (answered++ % 2 === 0 ? { status: 'succeeded', output: { run: run.run_id } } : flaky.answer(run)),
      });
      const responses = await Promise.all(
        Array.from({ length: 12 }, () =>
          execute(
            service,
            user.token,
            { user_id: user.email, agent_id: 'agent_sales_outreach_008', input: { leads: '/srv/leads.csv', template: 'Hello {{name}}' } },
            randomUUID(),
            { prefer: 'wait=2' },
          ),
        ),
      );
      expect(responses.every((response) => response.status === 200 || response.status === 202)).toBe(true);
      await waitFor(async () => (flaky.started.length > 0 ? true : undefined), 'a run held');
      await user.node.stop();
      await waitFor(
        async () => (runsOf(service, user.email).every((run) => run.status === 'succeeded' || run.status === 'failed') ? true : undefined),
        'every run finished',
        30_000,
      );
      expectChargedEqualsSucceeded(service, user.email);
      expect(runsOf(service, user.email).filter((run) => run.status === 'failed').length).toBeGreaterThan(0);
    });
  });

  it('a node runs a run of its own: 202 at once with its lease, running on it, and its result finishes it', async () => {
    const user = await paidUser(service, 20);
    const node = await enrollNode(service.baseUrl, user.email);
    const started = await execute(service, node.credential, {
      user_id: user.email,
      agent_id: 'agent_ops_monitor_004',
      input: { thresholds: {} },
    });
    expect(started.status, started.text).toBe(202);
    expect(started.body).toMatchObject({
      status: 'running',
      node_id: node.node_id,
      charged_cents: 4,
      lease: { lease_id: expect.any(String) },
    });
    const done = await api(`/v1/swarm/runs/${started.body.run_id}/result`, {
      token: node.credential,
      body: { lease_id: started.body.lease.lease_id, status: 'succeeded', output: { findings: [] } },
    });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({
      status: 'succeeded',
      charged_cents: 4,
      balance_cents: 16,
      node_id: node.node_id,
      output: { findings: [] },
    });
    // Another user's e-mail through this node's credential is refused.
    const foreign = await execute(service, node.credential, { user_id: 'someone-else@example.com', agent_id: 'agent_ops_monitor_004' });
    expect(foreign.status).toBe(403);
  });

  it("GET /v1/swarm/nodes lists the user's nodes: hostname, version, last seen, online, agents, runs today", async () => {
    const user = await paidUserWithNode(service, 20, { agents: ['agent_ops_monitor_004', 'agent_svc_skills_005'] });
    await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' });
    const idle = await enrollNode(service.baseUrl, user.email);
    const listed = await api('/v1/swarm/nodes', { token: user.token });
    expect(listed.status).toBe(200);
    expect(listed.body.nodes).toEqual([
      {
        node_id: user.node.node_id,
        hostname: 'test-node',
        name: null,
        version: 'test',
        tier_id: 'svc_starter_agents',
        enrolled_at: expect.any(String),
        last_seen_at: expect.any(String),
        online: true,
        agents: ['agent_ops_monitor_004', 'agent_svc_skills_005'],
        labels: [],
        runs_today: 1,
        ephemeral: false,
        health: null,
        drained_at: null,
      },
      {
        node_id: idle.node_id,
        hostname: null,
        name: null,
        version: null,
        tier_id: 'svc_starter_agents',
        enrolled_at: expect.any(String),
        last_seen_at: null,
        online: false,
        agents: [],
        labels: [],
        runs_today: 0,
        ephemeral: false,
        health: null,
        drained_at: null,
      },
    ]);
    expect((await api('/v1/swarm/nodes', { token: user.node.credential })).status).toBe(401);

    // Each node asks about itself with its own credential: what the fleet says of it. Asking does not make it seen.
    const asSelf = (token: string) => api('/v1/swarm/nodes/self', { token });
    expect((await asSelf(user.node.credential)).body).toEqual(listed.body.nodes[0]);
    expect((await asSelf(idle.credential)).body).toEqual(listed.body.nodes[1]);
    expect((await asSelf(idle.credential)).body).toMatchObject({ last_seen_at: null, online: false });
    expect((await asSelf(user.token)).status).toBe(401);
    expect((await asSelf('svcn_' + 'x'.repeat(43))).body).toMatchObject({ status: 401, code: 'unauthorized' });
    const gone = await enrollNode(service.baseUrl, user.email);
    const removed = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self`, { method: 'DELETE', token: gone.credential });
    expect(removed.status, removed.text).toBe(200);
    expect((await asSelf(gone.credential)).body).toMatchObject({ status: 410, code: 'node_removed' });

    // A node among several on its host sends its name with its polls (install --name); one that is not a name is 400.
    const poll = (name: string) =>
      api('/v1/swarm/nodes/poll', {
        token: idle.credential,
        body: { hostname: 'box', name, version: 'test', capacity: 0, running: [], wait_seconds: 0 },
      });
    expect((await poll('gpu')).status).toBe(200);
    expect((await poll('../GPU')).status).toBe(400);
    const named = await api('/v1/swarm/nodes', { token: user.token });
    expect(named.body.nodes.find((node: { node_id: string }) => node.node_id === idle.node_id)).toMatchObject({
      hostname: 'box',
      name: 'gpu',
    });
  });

  it('withdrawing an agent stops its routing; an unknown agent is 404', async () => {
    const user = await paidUserWithNode(service, 20, { agents: ['agent_ops_monitor_004'] });
    const withdrawn = await api('/v1/swarm/nodes/self/agents/agent_ops_monitor_004', { method: 'DELETE', token: user.node.credential });
    expect(withdrawn.body).toEqual({ node_id: user.node.node_id, agents: [] });
    expect((await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' })).status).toBe(409);
    const unknown = await api('/v1/swarm/nodes/self/agents/agent_nope', { method: 'PUT', token: user.node.credential });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('agent_not_found');
  });

  it("rotates the node credential with its user's JWT: the old one works until the new one is used, then never again; the node cannot rotate", async () => {
    const user = await paidUser(service, 0);
    const node = await enrollNode(service.baseUrl, user.email);
    const agents = (token: string) => api('/v1/swarm/nodes/self/agents/agent_ops_monitor_004', { method: 'PUT', token });
    // The node's own credential rotates nothing (a taken-over host must not keep its node): rotation takes the JWT.
    expect((await api('/v1/swarm/nodes/self/credential', { method: 'POST', token: node.credential })).status).toBe(401);
    expect((await api(`/v1/swarm/nodes/${node.node_id}/credential`, { method: 'POST', token: node.credential })).status).toBe(401);
    const rotated = await api(`/v1/swarm/nodes/${node.node_id}/credential`, { method: 'POST', token: user.token });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body).toEqual({ node_id: node.node_id, node_credential: expect.stringMatching(/^svcn_[\w-]{43}$/) });
    // The old one works until the new one is used (a lost answer locks no node out), then never again.
    expect((await agents(node.credential)).status).toBe(200);
    expect((await agents(rotated.body.node_credential)).status).toBe(200);
    const old = await agents(node.credential);
    expect(old.status).toBe(401);
    expect(old.text).not.toContain(node.credential);
    expect(JSON.stringify(service.db.prepare('SELECT * FROM nodes').all())).not.toContain(rotated.body.node_credential);
  });
});

describe('a dev portal purchase installs a node too', () => {
  it('activates and enrolls a dev_portal_execution_billing session; a wallet-fund one stays a top-up (403)', async () => {
    const service = await startSvcApi();
    try {
      const { activatedSession } = await import('../helpers/funnel.js');
      const { uniqueEmail } = await import('../helpers/temp.js');
      const dev = await activatedSession(service.baseUrl, uniqueEmail('dev'), 'dev_portal_execution_billing');
      const enrolled = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/enroll`, { method: 'POST', token: dev.deploy_token });
      expect(enrolled.status, enrolled.text).toBe(200);
      expect(enrolled.body.tier_id).toBe('dev_portal_execution_billing');
      const { payAndConfirm } = await import('../helpers/funnel.js');
      const email = uniqueEmail('fund');
      const session = await httpRequest(`${service.baseUrl}/v1/swarm/paygate/session`, {
        body: { tier_id: 'svc_pay_wallet_fund', user_id: email },
      });
      const payment = await payAndConfirm(service.baseUrl, 'svc_pay_wallet_fund', email, 500);
      const { recentToken } = await import('../helpers/funnel.js');
      const token = await recentToken(service.baseUrl, email, 'svc_pay_wallet_fund');
      const topUp = await httpRequest(`${service.baseUrl}/v1/swarm/paygate/activate`, {
        body: { session_id: session.body.session_id, payment_id: payment },
        token,
      });
      expect(topUp.status).toBe(403);
      expect(topUp.body.detail).toContain('tops up the wallet and installs no node');
      expect(await service.ctx.ledger.balance(email)).toBe(500);
    } finally {
      await service.close();
    }
  });
});

describe('a lease shorter than the poll hold (svc-api --lease-seconds 5)', () => {
  it('holds a poll at most half a lease: a node waiting for work stays online the whole time', async () => {
    // The default hold (20 s) with a 5 s lease, as `svc-api --lease-seconds 5` sets it.
    const service = await startSvcApi({ runTiming: { leaseMs: 5_000, sweepMs: 100 } });
    try {
      const user = await paidUser(service, 0);
      const node = await enrollNode(service.baseUrl, user.email);
      let answered = false;
      const poll = httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
        token: node.credential,
        body: { hostname: 'test-node', version: 'test', capacity: 1, running: [], wait_seconds: 20 },
      }).finally(() => {
        answered = true;
      });
      // Online once the poll has reached the service (the listing may be answered before it on a loaded machine)...
      const online = async (): Promise<boolean> =>
        (await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token: user.token })).body.nodes[0].online as boolean;
      await waitFor(async () => ((await online()) ? true : undefined), 'the poll to reach the service');
      // ...then asked over and over while the poll is held: never offline (stops at the first offline answer).
      const seen: boolean[] = [];
      while (!answered && seen.at(-1) !== false) {
        seen.push(await online());
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(seen).not.toContain(false);
      expect((await poll).body).toMatchObject({ runs: [], lost: [], lease_seconds: 5 });
    } finally {
      await service.close();
    }
  });

  it('a node gone mid-poll (its connection closed) is handed no run: the run stays queued for a live node', async () => {
    const service = await startSvcApi({ runTiming: { leaseMs: 5_000, sweepMs: 100 } });
    try {
      const user = await paidUser(service, 100);
      const node = await enrollNode(service.baseUrl, user.email);
      const served = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/agent_ops_monitor_004`, {
        method: 'PUT',
        token: node.credential,
      });
      expect(served.status, served.text).toBe(200);
      const killed = new AbortController();
      const poll = fetch(`${service.baseUrl}/v1/swarm/nodes/poll`, {
        method: 'POST',
        headers: { authorization: `Bearer ${node.credential}`, 'content-type': 'application/json' },
        body: JSON.stringify({ hostname: 'test-node', version: 'test', capacity: 1, running: [], wait_seconds: 20 }),
        signal: killed.signal,
      }).catch(() => 'closed');
      const lastSeen = service.db.prepare<[string], { last_seen_at: number | null }>('SELECT last_seen_at FROM nodes WHERE node_id = ?');
      await waitFor(async () => (lastSeen.get(node.node_id)?.last_seen_at != null ? true : undefined), 'the poll held');
      killed.abort();
      expect(await poll).toBe('closed');
      // A round trip after the close: the service has seen the connection go.
      expect((await httpRequest(`${service.baseUrl}/v1/swarm/nodes`, { token: user.token })).body.nodes[0].online).toBe(true);

      const started = await execute(service, user.token, { user_id: user.email, agent_id: 'agent_ops_monitor_004' }, randomUUID(), {
        prefer: 'respond-async',
      });
      expect(started.status, started.text).toBe(202);
      expect(started.body).toMatchObject({ status: 'queued', node_id: null });
    } finally {
      await service.close();
    }
  });
});

describe("a node's last_seen_at", () => {
  it('is written by a poll at most once a second, and at once when what the node says of its host changed', async () => {
    const clock = new StoppedClock(Date.now());
    const service = await startSvcApi({ clock });
    try {
      const user = await paidUser(service, 0);
      const node = await enrollNode(service.baseUrl, user.email);
      const stored = () =>
        service.db.prepare('SELECT last_seen_at, hostname FROM nodes WHERE node_id = ?').get(node.node_id) as {
          last_seen_at: number;
          hostname: string;
        };
      const poll = async (hostname: string): Promise<void> => {
        const answer = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
          token: node.credential,
          body: { hostname, version: 'test', capacity: 1, running: [], wait_seconds: 0 },
        });
        expect(answer.status, answer.text).toBe(200);
      };
      const first = clock.now();
      await poll('box-a');
      expect(stored()).toEqual({ last_seen_at: first, hostname: 'box-a' });
      clock.advance(600);
      await poll('box-a');
      expect(Number(stored().last_seen_at)).toBe(first);
      clock.advance(500);
      await poll('box-a');
      expect(Number(stored().last_seen_at)).toBe(first + 1_100);
      clock.advance(10);
      await poll('box-b');
      expect(stored()).toEqual({ last_seen_at: first + 1_110, hostname: 'box-b' });
    } finally {
      await service.close();
    }
  });
});

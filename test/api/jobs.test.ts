// docs/api.md "Runs as jobs", the service's side: the queue (a run waits for a node that serves its agent, up to
// queue_seconds; a daemon's clean stop), cancel, retries of retry-safe runs lost with their node, the history, a
// pending run settled by its key, and time limits. The nodes are the test's protocol peers (test/helpers/
// protocol-node.ts), so each step happens when the test says; the real daemon's side is in test/daemon/jobs.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { archiveOf, manifestOf } from '../helpers/agent-archives.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, type Answer, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { TEST_RUN_TIMING, entriesOf, execute, ledgerSnapshot, paidUser, stopNodes, type PaidUser } from './execute-fixtures.js';

const AGENT = 'agent_ops_monitor_004';
/** Long enough for a loaded machine; every wait below ends at its event, long before this. */
const EVENT_MS = 30_000;

/** An answer the test gives when it wants to (the run stays held, its lease renewed, until then). */
function held(): { answer: (run: AssignedRun) => Promise<Answer>; started: AssignedRun[]; release: (answer?: Answer) => void } {
  const started: AssignedRun[] = [];
  const waiting: Array<(answer: Answer) => void> = [];
  return {
    started,
    answer: (run) => {
      started.push(run);
      return new Promise((resolve) => waiting.push(resolve));
    },
    release: (answer = { status: 'succeeded', output: { released: true } }) => {
      for (const resolve of waiting.splice(0)) resolve(answer);
    },
  };
}

describe('runs as jobs', () => {
  let service: TestService;
  const api = (path: string, init: Parameters<typeof httpRequest>[1] = {}) => httpRequest(`${service.baseUrl}${path}`, init);
  const nodeCall = (node: EnrolledTestNode, method: string, path: string, body?: unknown) =>
    api(path, { method, token: node.credential, ...(body === undefined ? {} : { body }) });
  const runOf = (user: PaidUser, runId: string, wait = 0) =>
    api(`/v1/swarm/runs/${runId}${wait > 0 ? `?wait=${wait}` : ''}`, { token: user.token });
  /** Follows the run until it ends (each GET holds up to 10 s). */
  const ended = (user: PaidUser, runId: string) =>
    waitFor(
      async () => {
        const run = await runOf(user, runId, 10);
        return ['succeeded', 'failed', 'cancelled'].includes(run.body.status) ? run : undefined;
      },
      `run ${runId} to end`,
      EVENT_MS,
    );
  const queued = (user: PaidUser, body: Record<string, unknown> = {}, key = randomUUID()) =>
    execute(service, user.token, { user_id: user.email, agent_id: AGENT, ...body }, key, { prefer: 'wait=0' });
  /** A node of the user that serves the agent but has never polled: it exists, and is offline. */
  const offlineNode = async (user: PaidUser): Promise<EnrolledTestNode> => {
    const node = await enrollNode(service.baseUrl, user.email);
    expect((await nodeCall(node, 'PUT', `/v1/swarm/nodes/self/agents/${AGENT}`)).status).toBe(200);
    return node;
  };

  beforeAll(async () => {
    service = await startSvcApi({ runTiming: { ...TEST_RUN_TIMING, cancelGraceMs: 1_500 } });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

  describe('the queue', () => {
    it('a run for a node that serves the agent but is offline waits queued, and starts when the node polls', async () => {
      const user = await paidUser(service, 100);
      const node = await offlineNode(user);
      const started = Date.now();
      const waiting = await queued(user);
      expect(waiting.status, waiting.text).toBe(202);
      expect(waiting.body).toMatchObject({ status: 'queued', charged_cents: 4, node_id: null });
      // The default bound: ten minutes (svc-api's queue timeout, which the tests set to a minute).
      expect(Date.parse(waiting.body.queue_expires_at)).toBeGreaterThanOrEqual(started + TEST_RUN_TIMING.queueTimeoutMs - 1000);
      const serving = await serve(service.baseUrl, node, { agents: [AGENT] });
      const done = await ended(user, waiting.body.run_id);
      expect(done.body).toMatchObject({ status: 'succeeded', charged_cents: 4, node_id: node.node_id, queue_expires_at: null });
      expect(serving.received.map((run) => run.run_id)).toEqual([waiting.body.run_id]);
    });

    it('waits at most queue_seconds: then it is refunded not_picked_up, once', async () => {
      const user = await paidUser(service, 100);
      await offlineNode(user);
      const waiting = await queued(user, { queue_seconds: 1 });
      expect(waiting.status).toBe(202);
      const done = await ended(user, waiting.body.run_id);
      expect(done.body).toMatchObject({ status: 'failed', charged_cents: 0, balance_cents: 100, output: { error: 'not_picked_up' } });
      expect(
        entriesOf(service, user.email)
          .filter((entry) => entry.run_id === waiting.body.run_id)
          .map((entry) => entry.kind),
      ).toEqual(['debit', 'refund']);
    });

    it('refuses at once (409) only when no node of the user serves the agent; queue_seconds 0 asks for an online one now', async () => {
      const user = await paidUser(service, 100);
      const before = ledgerSnapshot(service);
      expect((await queued(user)).status).toBe(409);
      await offlineNode(user);
      const now = await queued(user, { queue_seconds: 0 });
      expect(now.status).toBe(409);
      expect(now.body.detail).toContain('are offline, and queue_seconds 0 asked not to wait for one');
      expect(ledgerSnapshot(service)).toEqual(before);
      for (const bad of [-1, 86_401, 1.5, '10']) expect((await queued(user, { queue_seconds: bad })).status).toBe(400);
    });

    it('a queued run whose only node is removed ends not_picked_up at once, not at its queue bound: no node is left that could take it', async () => {
      const user = await paidUser(service, 100);
      const node = await offlineNode(user);
      const waiting = await queued(user, { queue_seconds: 3600 });
      expect(waiting.body.status).toBe('queued');
      expect((await api(`/v1/swarm/nodes/${node.node_id}`, { method: 'DELETE', token: user.token })).status).toBe(200);
      const done = await ended(user, waiting.body.run_id);
      expect(done.body).toMatchObject({ status: 'failed', charged_cents: 0, output: { error: 'not_picked_up' } });
      expect(Date.parse(done.body.finished_at)).toBeLessThan(Date.parse(waiting.body.queue_expires_at));
    });

    it('a daemon that stops cleanly is offline at once: nothing is routed to it until it polls again', async () => {
      const user = await paidUser(service, 100);
      const node = await enrollNode(service.baseUrl, user.email);
      const first = await serve(service.baseUrl, node, { agents: [AGENT] });
      const online = async () => (await api('/v1/swarm/nodes', { token: user.token })).body.nodes[0].online as boolean;
      expect(await online()).toBe(true);
      await first.stop();
      expect((await nodeCall(node, 'POST', '/v1/swarm/nodes/self/offline')).status).toBe(204);
      expect(await online()).toBe(false);
      expect((await queued(user, { queue_seconds: 0 })).status).toBe(409);
      const waiting = await queued(user);
      expect(waiting.body.status).toBe('queued');
      const again = await serve(service.baseUrl, node, { agents: [AGENT] });
      expect(await online()).toBe(true);
      expect((await ended(user, waiting.body.run_id)).body.status).toBe('succeeded');
      expect(again.received).toHaveLength(1);
    });
  });

  describe('cancel', () => {
    const cancel = (user: PaidUser, runId: string) => api(`/v1/swarm/runs/${runId}/cancel`, { method: 'POST', token: user.token });

    it('a queued run ends cancelled at once, refunded once; a repeat answers the same; the history tells it from a failure', async () => {
      const user = await paidUser(service, 100);
      await offlineNode(user);
      const waiting = await queued(user);
      const cancelled = await cancel(user, waiting.body.run_id);
      expect(cancelled.status, cancelled.text).toBe(200);
      expect(cancelled.body).toMatchObject({ status: 'cancelled', charged_cents: 0, balance_cents: 100, output: { error: 'cancelled' } });
      const again = await cancel(user, waiting.body.run_id);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('cancelled');
      expect(entriesOf(service, user.email).map((entry) => entry.kind)).toEqual(['credit', 'debit', 'refund']);
      const listed = async (status: string) =>
        (await api(`/v1/swarm/runs?status=${status}`, { token: user.token })).body.runs.map((run: { run_id: string }) => run.run_id);
      expect(await listed('cancelled')).toEqual([waiting.body.run_id]);
      expect(await listed('failed')).toEqual([]);
    });

    it('a running run is stopped by its node within its held poll and ends cancelled, refunded once', async () => {
      const user = await paidUser(service, 100);
      const work = held();
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
        agents: [AGENT],
        answer: work.answer,
        waitSeconds: 20,
      });
      const running = await queued(user);
      await waitFor(async () => (work.started.length > 0 ? true : undefined), 'the node to start the run', EVENT_MS);
      const asked = await cancel(user, running.body.run_id);
      expect(asked.status, asked.text).toBe(202);
      expect(asked.body).toMatchObject({ status: 'running', cancel_requested_at: expect.any(String) });
      // The node's poll, held for up to 20 s, ends with the cancel: within seconds, not a hold.
      const done = await ended(user, running.body.run_id);
      expect(done.body).toMatchObject({ status: 'cancelled', charged_cents: 0, output: { error: 'cancelled' } });
      expect(node.cancels).toEqual([running.body.run_id]);
      expect(Date.parse(done.body.finished_at) - Date.parse(asked.body.cancel_requested_at)).toBeLessThan(10_000);
      expect(
        entriesOf(service, user.email)
          .filter((entry) => entry.run_id === running.body.run_id)
          .map((entry) => entry.kind),
      ).toEqual(['debit', 'refund']);
      work.release();
    });

    it('a node that stays silent has the run ended cancelled after the grace; its late result is refused', async () => {
      const user = await paidUser(service, 100);
      const work = held();
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
        agents: [AGENT],
        answer: work.answer,
        ignoreCancel: true,
      });
      const running = await queued(user);
      await waitFor(async () => (work.started.length > 0 ? true : undefined), 'the node to start the run', EVENT_MS);
      expect((await cancel(user, running.body.run_id)).status).toBe(202);
      const done = await ended(user, running.body.run_id);
      expect(done.body).toMatchObject({ status: 'cancelled', charged_cents: 0 });
      expect(node.cancels).toContain(running.body.run_id);
      const late = await nodeCall(node, 'POST', `/v1/swarm/runs/${running.body.run_id}/result`, {
        lease_id: work.started[0]!.lease_id,
        status: 'succeeded',
        output: { late: true },
      });
      expect(late.status).toBe(409);
      expect(late.body.code).toBe('lease_lost');
      expect(
        entriesOf(service, user.email)
          .filter((entry) => entry.run_id === running.body.run_id)
          .map((entry) => entry.kind),
      ).toEqual(['debit', 'refund']);
    });

    it('a result the node sent before it saw the cancel stands: the user got what they paid for', async () => {
      const user = await paidUser(service, 100);
      const work = held();
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
        agents: [AGENT],
        answer: work.answer,
        ignoreCancel: true,
      });
      const running = await queued(user);
      await waitFor(async () => (work.started.length > 0 ? true : undefined), 'the node to start the run', EVENT_MS);
      expect((await cancel(user, running.body.run_id)).status).toBe(202);
      const result = await nodeCall(node, 'POST', `/v1/swarm/runs/${running.body.run_id}/result`, {
        lease_id: work.started[0]!.lease_id,
        status: 'succeeded',
        output: { done: true },
      });
      expect(result.status).toBe(200);
      expect((await ended(user, running.body.run_id)).body).toMatchObject({ status: 'succeeded', charged_cents: 4 });
      work.release();
    });

    it("a finished run cannot be cancelled (409); another user's or an unknown run is 404", async () => {
      const user = await paidUser(service, 100);
      await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT] });
      const done = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
      expect(done.body.status).toBe('succeeded');
      const late = await cancel(user, done.body.run_id);
      expect(late.status).toBe(409);
      expect(late.body).toMatchObject({ code: 'run_finished', run_status: 'succeeded' });
      const stranger = await paidUser(service, 0);
      expect((await cancel(stranger, done.body.run_id)).status).toBe(404);
      expect((await cancel(user, randomUUID())).status).toBe(404);
      expect((await api(`/v1/swarm/runs/${done.body.run_id}/cancel`, { method: 'POST' })).status).toBe(401);
    });
  });

  describe('retries', () => {
    /** The user's current version of AGENT says its runs may run again from the start. */
    const uploadRetrySafe = async (user: PaidUser, retrySafe: boolean): Promise<void> => {
      const archive = await archiveOf([
        { name: 'agent.json', data: manifestOf(AGENT, `r-${randomUUID().slice(0, 8)}`, { retry_safe: retrySafe }) },
        { name: 'main.sh', data: '#!/bin/sh\ncat >/dev/null\necho {}\n', mode: 0o755 },
      ]);
      const uploaded = await api(`/v1/swarm/agents/${AGENT}/versions`, {
        method: 'POST',
        rawBody: archive,
        token: user.token,
        headers: { 'content-type': 'application/gzip' },
      });
      expect(uploaded.status, uploaded.text).toBe(201);
    };

    it(
      'a retry-safe run lost with its node runs again on another, under the same id and charge; the lost node is fenced',
      { timeout: 60_000 },
      async () => {
        const user = await paidUser(service, 100);
        await uploadRetrySafe(user, true);
        const lost = held();
        const first = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT], answer: lost.answer });
        const run = await queued(user);
        await waitFor(async () => (lost.started.length > 0 ? true : undefined), 'the first node to take the run', EVENT_MS);
        expect(lost.started[0]).toMatchObject({ run_id: run.body.run_id, attempt: 1 });
        await first.stop();
        const second = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT] });
        const done = await ended(user, run.body.run_id);
        expect(done.body).toMatchObject({
          run_id: run.body.run_id,
          status: 'succeeded',
          charged_cents: 4,
          attempt: 2,
          node_id: second.node_id,
        });
        expect(second.received.map((each) => each.attempt)).toEqual([2]);
        expect(done.body.attempts).toEqual([
          expect.objectContaining({ attempt: 1, node_id: first.node_id, outcome: 'node_lost' }),
          expect.objectContaining({ attempt: 2, node_id: second.node_id, outcome: 'succeeded' }),
        ]);
        const late = await nodeCall(first, 'POST', `/v1/swarm/runs/${run.body.run_id}/result`, {
          lease_id: lost.started[0]!.lease_id,
          status: 'succeeded',
          output: { twice: true },
        });
        expect(late.status).toBe(409);
        // Charged once: one debit, no refund.
        expect(
          entriesOf(service, user.email)
            .filter((entry) => entry.run_id === run.body.run_id)
            .map((entry) => entry.kind),
        ).toEqual(['debit']);
      },
    );

    it('at most three attempts: lost a third time, it fails node_lost and is refunded once', { timeout: 90_000 }, async () => {
      const user = await paidUser(service, 100);
      await uploadRetrySafe(user, true);
      const nodes = [await offlineNode(user), await offlineNode(user), await offlineNode(user)];
      const run = await queued(user);
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        const lost = held();
        const node = await serve(service.baseUrl, nodes[attempt - 1]!, { agents: [AGENT], answer: lost.answer });
        await waitFor(async () => (lost.started.length > 0 ? true : undefined), `attempt ${attempt}`, EVENT_MS);
        expect(lost.started[0]!.attempt).toBe(attempt);
        await node.stop();
        if (attempt < 3)
          await waitFor(
            async () => ((await runOf(user, run.body.run_id)).body.status === 'queued' ? true : undefined),
            'the run queued again',
            EVENT_MS,
          );
      }
      const done = await ended(user, run.body.run_id);
      expect(done.body).toMatchObject({ status: 'failed', charged_cents: 0, attempt: 3, output: { error: 'node_lost' } });
      expect(done.body.attempts.map((each: { outcome: string }) => each.outcome)).toEqual(['node_lost', 'node_lost', 'failed']);
      expect(
        entriesOf(service, user.email)
          .filter((entry) => entry.run_id === run.body.run_id)
          .map((entry) => entry.kind),
      ).toEqual(['debit', 'refund']);
    });

    it(
      "a run whose agent is not retry-safe is refunded node_lost, never run again; one interrupted by its node's restart runs again if it is",
      { timeout: 60_000 },
      async () => {
        const user = await paidUser(service, 100);
        await uploadRetrySafe(user, false);
        const lost = held();
        const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT], answer: lost.answer });
        const once = await queued(user);
        await waitFor(async () => (lost.started.length > 0 ? true : undefined), 'the node to take the run', EVENT_MS);
        await node.stop();
        expect((await ended(user, once.body.run_id)).body).toMatchObject({ status: 'failed', output: { error: 'node_lost' }, attempt: 1 });

        await uploadRetrySafe(user, true);
        const restarted = held();
        const again = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
          agents: [AGENT],
          answer: restarted.answer,
        });
        const run = await queued(user);
        await waitFor(async () => (restarted.started.length > 0 ? true : undefined), 'the node to take the run', EVENT_MS);
        const interrupted = await nodeCall(again, 'POST', `/v1/swarm/runs/${run.body.run_id}/result`, {
          lease_id: restarted.started[0]!.lease_id,
          status: 'failed',
          output: { error: 'interrupted', message: 'the node restarted mid-run' },
        });
        expect(interrupted.status).toBe(200);
        expect(interrupted.body).toMatchObject({ status: 'queued', attempt: 2 });
        await waitFor(async () => (restarted.started.length > 1 ? true : undefined), 'the run handed again', EVENT_MS);
        expect(restarted.started[1]).toMatchObject({ run_id: run.body.run_id, attempt: 2 });
        restarted.release();
        expect((await ended(user, run.body.run_id)).body).toMatchObject({ status: 'succeeded', charged_cents: 4, attempt: 2 });
      },
    );
  });

  describe('the history', () => {
    it("lists the user's runs newest first, a page at a time, filtered by agent, status, node and time", async () => {
      const user = await paidUser(service, 500);
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT, 'agent_svc_skills_005'] });
      const ids: string[] = [];
      for (let n = 0; n < 5; n += 1) {
        const ran = await execute(service, user.token, {
          user_id: user.email,
          agent_id: n % 2 === 0 ? AGENT : 'agent_svc_skills_005',
          ...(n % 2 === 0 ? {} : { input: { quiz: 1 } }),
        });
        expect(ran.status, ran.text).toBe(200);
        ids.push(ran.body.run_id);
      }
      const stranger = await paidUser(service, 100);
      await serve(service.baseUrl, await enrollNode(service.baseUrl, stranger.email), { agents: [AGENT] });
      await execute(service, stranger.token, { user_id: stranger.email, agent_id: AGENT });

      const page = (query: string) => api(`/v1/swarm/runs${query}`, { token: user.token });
      const all = await page('');
      expect(all.status, all.text).toBe(200);
      expect(all.body.runs.map((run: { run_id: string }) => run.run_id)).toEqual([...ids].reverse());
      expect(all.body.next_cursor).toBeNull();
      expect(all.body.runs[0]).toMatchObject({ status: 'succeeded', node_id: node.node_id, attempt: 1, error: null });
      expect(all.body.runs[0].output).toBeUndefined();

      const seen: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const next = await page(`?limit=2${cursor === '' ? '' : `&cursor=${cursor}`}`);
        expect(next.body.runs.length).toBeLessThanOrEqual(2);
        seen.push(...next.body.runs.map((run: { run_id: string }) => run.run_id));
        cursor = next.body.next_cursor;
      }
      expect(seen).toEqual([...ids].reverse());

      expect((await page(`?agent_id=${AGENT}`)).body.runs).toHaveLength(3);
      expect((await page(`?node_id=${node.node_id}&status=succeeded`)).body.runs).toHaveLength(5);
      expect((await page('?status=failed')).body.runs).toHaveLength(0);
      expect((await page(`?since=${new Date(Date.now() + 60_000).toISOString()}`)).body.runs).toHaveLength(0);
      expect((await page(`?until=${new Date(Date.now() + 60_000).toISOString()}`)).body.runs).toHaveLength(5);
      for (const bad of ['?limit=0', '?limit=201', '?cursor=forged', '?since=yesterday', '?status=lost', '?page=2']) {
        const refused = await page(bad);
        expect(refused.status, bad).toBe(400);
        expect(refused.headers.get('content-type')).toContain('application/problem+json');
      }
      expect((await api('/v1/swarm/runs')).status).toBe(401);
      expect((await api('/v1/swarm/runs', { token: node.credential })).status).toBe(401);
    });
  });

  describe('a pending run settled by its key', () => {
    const byKey = (token: string, key: string) =>
      api('/v1/swarm/runs/by-key', { method: 'POST', token, headers: { 'idempotency-key': key } });

    it("finds the key's run; a key with none is settled as never run, and an execute with it arriving later runs nothing", async () => {
      const user = await paidUser(service, 100);
      await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT] });
      const key = randomUUID();
      const ran = await execute(service, user.token, { user_id: user.email, agent_id: AGENT }, key);
      const found = await byKey(user.token, key);
      expect(found.status, found.text).toBe(200);
      expect(found.body).toMatchObject({ idempotency_key: key, settled: 'found', run: { run_id: ran.body.run_id, status: 'succeeded' } });

      const lostKey = randomUUID();
      const never = await byKey(user.token, lostKey);
      expect(never.body).toEqual({ idempotency_key: lostKey, settled: 'never_ran', run: null });
      const before = ledgerSnapshot(service);
      const arriving = await execute(service, user.token, { user_id: user.email, agent_id: AGENT }, lostKey);
      expect(arriving.status).toBe(409);
      expect(arriving.body.code).toBe('idempotency_key_void');
      expect(ledgerSnapshot(service)).toEqual(before);
      expect((await byKey(user.token, lostKey)).body.settled).toBe('never_ran');
      // Another user's key is theirs: this user's lookup settles only its own.
      const stranger = await paidUser(service, 0);
      expect((await byKey(stranger.token, key)).body.settled).toBe('never_ran');
      expect((await api('/v1/swarm/runs/by-key', { method: 'POST', token: user.token })).status).toBe(400);
    });
  });

  describe('time limits', () => {
    it("a run takes its agent's limit, or less when execute asks; never more", async () => {
      const user = await paidUser(service, 100);
      const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT] });
      const ran = async (body: Record<string, unknown>) =>
        (await execute(service, user.token, { user_id: user.email, agent_id: AGENT, ...body })).body;
      const asIs = await ran({});
      const agentLimit = asIs.timeout_seconds as number;
      expect(agentLimit).toBeGreaterThan(0);
      expect((await ran({ timeout_seconds: 5 })).timeout_seconds).toBe(5);
      expect((await ran({ timeout_seconds: agentLimit + 100 })).timeout_seconds).toBe(agentLimit);
      expect(node.received.map((run) => run.timeout_seconds)).toEqual([agentLimit, 5, agentLimit]);
      for (const bad of [0, 6 * 3600 + 1, 'long'])
        expect((await execute(service, user.token, { user_id: user.email, agent_id: AGENT, timeout_seconds: bad })).status).toBe(400);
    });
  });
});

// docs/api.md "Node health" and "Draining a node", over real HTTP on either engine: a node's poll says how its host
// is and the user's fleet shows it, with when it came; a health the schema or its sense refuses is a 400 that changes
// nothing; a drained node, still online, is handed no new run (another node takes it, or it waits) while its runs
// already held finish, and takes runs again once resumed; only the node's own user drains it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { TEST_RUN_TIMING, execute, paidUser, type PaidUser } from './execute-fixtures.js';
import { SAMPLE_HEALTH } from '../helpers/node-health-sample.js';

const AGENT = 'agent_ops_monitor_004';

const HEALTH = SAMPLE_HEALTH;

/** Deep enough that no flat field could take it. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
}

describe('node health and drain', () => {
  let service: TestService;
  const api = (path: string, init: Parameters<typeof httpRequest>[1] = {}) => httpRequest(`${service.baseUrl}${path}`, init);
  const poll = (node: EnrolledTestNode, extra: Record<string, unknown> = {}, capacity = 0): Promise<ApiResponse> =>
    api('/v1/swarm/nodes/poll', {
      token: node.credential,
      body: { hostname: 'health-host', version: 'test', capacity, running: [], wait_seconds: 0, ...extra },
    });
  const fleetNode = async (user: PaidUser, node: EnrolledTestNode): Promise<Record<string, unknown>> => {
    const fleet = await api('/v1/swarm/nodes', { token: user.token });
    expect(fleet.status, fleet.text).toBe(200);
    return (fleet.body.nodes as Array<Record<string, unknown>>).find((each) => each.node_id === node.node_id)!;
  };
  /** An enrolled node of the user's, serving AGENT, seen once. */
  const servingNode = async (user: PaidUser): Promise<EnrolledTestNode> => {
    const node = await enrollNode(service.baseUrl, user.email);
    const registered = await api(`/v1/swarm/nodes/self/agents/${AGENT}`, { method: 'PUT', token: node.credential });
    expect(registered.status, registered.text).toBe(200);
    expect((await poll(node)).status).toBe(200);
    return node;
  };
  const drain = (user: PaidUser, node: EnrolledTestNode | string, action: 'drain' | 'resume' = 'drain') =>
    api(`/v1/swarm/nodes/${typeof node === 'string' ? node : node.node_id}/${action}`, { method: 'POST', token: user.token });
  const queuedRun = async (user: PaidUser, body: Record<string, unknown> = {}): Promise<string> => {
    const started = await execute(service, user.token, { user_id: user.email, agent_id: AGENT, ...body }, undefined, {
      prefer: 'respond-async',
    });
    expect(started.status, started.text).toBe(202);
    return started.body.run_id as string;
  };
  const runOf = async (user: PaidUser, runId: string) => (await api(`/v1/swarm/runs/${runId}`, { token: user.token })).body;

  beforeAll(async () => {
    service = await startSvcApi({ runTiming: { ...TEST_RUN_TIMING, leaseMs: 30_000 } });
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  it("shows a poll's health in the user's nodes with when it came; a node that never said it shows null", async () => {
    const user = await paidUser(service, 0);
    const node = await servingNode(user);
    const before = await fleetNode(user, node);
    expect(before).toMatchObject({ health: null, drained_at: null, online: true });
    const polled = await poll(node, { health: HEALTH });
    expect(polled.status, polled.text).toBe(200);
    expect(polled.body.drained).toBeUndefined();
    const after = await fleetNode(user, node);
    expect(after.health).toEqual({ ...HEALTH, reported_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    // Without the disk (the node could not read its filesystem): the rest is taken, the disk absent.
    const { disk_free_bytes: _free, disk_total_bytes: _total, ...noDisk } = HEALTH;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await poll(node, { health: { ...noDisk, load_1: 3 } })).status).toBe(200);
    expect((await fleetNode(user, node)).health).toEqual({ ...noDisk, load_1: 3, reported_at: expect.any(String) });
  });

  it('refuses a bad health with a 400 naming the field, and keeps what was there', async () => {
    const user = await paidUser(service, 0);
    const node = await servingNode(user);
    expect((await poll(node, { health: HEALTH })).status).toBe(200);
    const kept = await fleetNode(user, node);
    const bad: Array<[string, unknown]> = [
      ['/health/load_1', { ...HEALTH, load_1: '0.5' }],
      ['/health/load_5', { ...HEALTH, load_5: 'NaN' }],
      ['/health/uptime_seconds', { ...HEALTH, uptime_seconds: 'Infinity' }],
      ['/health/memory_total_bytes', { ...HEALTH, memory_total_bytes: 2 ** 60 }],
      ['/health/load_15', { ...HEALTH, load_15: 1e300 }],
      ['/health/disk_free_bytes', { ...HEALTH, disk_free_bytes: -1 }],
      ['/health/memory_available_bytes', { ...HEALTH, memory_available_bytes: 1.5 }],
      ['/health/load_1', { ...HEALTH, load_1: nested(10) }],
      // Deeper than any body may nest: refused before it is read into a schema.
      ['nests deeper than', { ...HEALTH, load_1: nested(200) }],
      ['/health/extra', { ...HEALTH, extra: 'x'.repeat(20_000) }],
      ['/health/memory_total_bytes', { load_1: 1, load_5: 1, load_15: 1, memory_available_bytes: 1, uptime_seconds: 1 }],
      ['/health', [1, 2, 3]],
      ['/health', null],
      ['/health', 'healthy'],
      ['/health/memory_available_bytes', { ...HEALTH, memory_available_bytes: HEALTH.memory_total_bytes + 1 }],
      ['/health/disk_free_bytes', { ...HEALTH, disk_free_bytes: HEALTH.disk_total_bytes! * 2 }],
      ['/health/disk_total_bytes', { ...HEALTH, disk_total_bytes: undefined }],
    ];
    for (const [path, health] of bad) {
      const refused = await poll(node, { health, hostname: 'changed-host', version: 'changed' });
      expect(refused.status, `${path}: ${refused.text}`).toBe(400);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.body.code).toBe('invalid_request');
      expect(refused.body.detail).toContain(path);
    }
    // Nothing of the refused polls was written: not the health, not the host's name, not the heartbeat.
    expect(await fleetNode(user, node)).toEqual(kept);
  });

  it('a drained node takes no new run and says so, stays online, finishes what it holds; resumed, it takes runs', async () => {
    const user = await paidUser(service, 100);
    const drained = await servingNode(user);
    const other = await servingNode(user);
    // A run the node holds before the drain: it finishes, and is charged, as ever.
    const held = await queuedRun(user);
    const took = await poll(drained, {}, 1);
    expect(took.body.runs.map((run: { run_id: string }) => run.run_id)).toEqual([held]);

    const first = await drain(user, drained);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ node_id: drained.node_id, drained_at: expect.any(String), changed: true });
    const again = await drain(user, drained);
    expect(again.body).toEqual({ ...first.body, changed: false });
    expect(await fleetNode(user, drained)).toMatchObject({ drained_at: first.body.drained_at, online: true });

    const queued = await queuedRun(user);
    const refused = await poll(drained, { running: [held] }, 4);
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ runs: [], lost: [], drained: true });
    const result = await api(`/v1/swarm/runs/${held}/result`, {
      token: drained.credential,
      body: { lease_id: took.body.runs[0].lease_id, status: 'succeeded', output: { ok: true } },
    });
    expect(result.status, result.text).toBe(200);
    expect(result.body.status).toBe('succeeded');
    // The other node takes the queued run.
    const taken = await poll(other, {}, 4);
    expect(taken.body.runs.map((run: { run_id: string }) => run.run_id)).toEqual([queued]);

    // Pinned to the drained node: it waits, and no other node takes it.
    const pinned = await queuedRun(user, { node_id: drained.node_id });
    expect((await poll(other, { running: [queued] }, 4)).body.runs).toEqual([]);
    expect((await poll(drained, {}, 4)).body.runs).toEqual([]);
    // Its run says why it waits: the node it is pinned to is drained.
    expect(await runOf(user, pinned)).toMatchObject({
      status: 'queued',
      node_id: null,
      waiting_for_node: { node_id: drained.node_id, drained_at: first.body.drained_at },
    });
    expect((await runOf(user, queued)).waiting_for_node).toBeUndefined();
    // A run that may not wait is refused, saying why.
    const now = await execute(service, user.token, { user_id: user.email, agent_id: AGENT, node_id: drained.node_id, queue_seconds: 0 });
    expect(now.status).toBe(409);
    expect(now.body.detail).toContain(`node ${drained.node_id} is drained`);

    // Resumed: a poll held open now is woken for the run waiting for it.
    const resumed = await drain(user, drained, 'resume');
    expect(resumed.body).toEqual({ node_id: drained.node_id, drained_at: null, changed: true });
    expect((await drain(user, drained, 'resume')).body.changed).toBe(false);
    const back = await poll(drained, {}, 4);
    expect(back.body.runs.map((run: { run_id: string }) => run.run_id)).toEqual([pinned]);
    expect(back.body.drained).toBeUndefined();
    expect((await runOf(user, pinned)).waiting_for_node).toBeUndefined();
    expect((await fleetNode(user, drained)).drained_at).toBeNull();
    const audit = await api('/v1/audit', { token: user.token });
    const kinds = (audit.body.events as Array<{ kind: string; detail: { node_id?: string } }>)
      .filter((event) => event.detail.node_id === drained.node_id)
      .map((event) => event.kind);
    expect(kinds.filter((kind) => kind === 'node_drained' || kind === 'node_resumed')).toEqual(['node_resumed', 'node_drained']);
  });

  it("a drained node's own run (swarm-node run on it, its daemon's schedules) is refused 409 node_drained, nothing charged; resumed, it runs", async () => {
    const user = await paidUser(service, 100);
    const node = await servingNode(user);
    expect((await drain(user, node)).status).toBe(200);
    const balance = async () => (await api('/v1/swarm/wallet', { token: user.token })).body.balance_cents as number;
    const before = await balance();
    for (const trigger of ['manual', 'schedule']) {
      const refused = await execute(service, node.credential, { user_id: user.email, agent_id: AGENT }, undefined, {
        prefer: 'respond-async',
        'svc-run-trigger': trigger,
      });
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body).toMatchObject({ code: 'node_drained', node_id: node.node_id });
      expect(refused.body.remedy).toContain(`swarm-node nodes resume ${node.node_id}`);
    }
    expect(await balance()).toBe(before);
    expect((await drain(user, node, 'resume')).status).toBe(200);
    const ran = await execute(service, node.credential, { user_id: user.email, agent_id: AGENT }, undefined, { prefer: 'respond-async' });
    expect(ran.status, ran.text).toBe(202);
    expect(ran.body).toMatchObject({ status: 'running', node_id: node.node_id });
  });

  it('a drained node hears it on every poll handed no run, one answering a cancel included', async () => {
    const user = await paidUser(service, 100);
    const node = await servingNode(user);
    const held = await queuedRun(user);
    expect((await poll(node, {}, 1)).body.runs).toHaveLength(1);
    expect((await drain(user, node)).status).toBe(200);
    expect((await api(`/v1/swarm/runs/${held}/cancel`, { method: 'POST', token: user.token })).status).toBeLessThan(300);
    const answered = await poll(node, { running: [held] }, 1);
    expect(answered.body).toMatchObject({ runs: [], cancel: [held], drained: true });
  });

  it('a poll held open by a drained node is woken by its resume and takes the run that waited', { timeout: 60_000 }, async () => {
    // Held up to 30 s: handed the run, the poll was woken by the resume, not ended by its hold.
    const holding = await startSvcApi({ runTiming: { ...TEST_RUN_TIMING, leaseMs: 90_000, pollHoldMs: 30_000 } });
    try {
      const user = await paidUser(holding, 100);
      const node = await enrollNode(holding.baseUrl, user.email);
      const call = (path: string, init: Parameters<typeof httpRequest>[1]) => httpRequest(`${holding.baseUrl}${path}`, init);
      expect((await call(`/v1/swarm/nodes/self/agents/${AGENT}`, { method: 'PUT', token: node.credential })).status).toBe(200);
      expect((await call(`/v1/swarm/nodes/${node.node_id}/drain`, { method: 'POST', token: user.token })).status).toBe(200);
      const started = await execute(holding, user.token, { user_id: user.email, agent_id: AGENT }, undefined, { prefer: 'respond-async' });
      expect(started.status, started.text).toBe(202);
      const held = call('/v1/swarm/nodes/poll', {
        token: node.credential,
        body: { hostname: 'health-host', version: 'test', capacity: 1, running: [], wait_seconds: 60 },
      });
      // The poll is held once the service has seen the node (it never polled before): only then is the resume a wake-up.
      await waitFor(async () => {
        const fleet = await call('/v1/swarm/nodes', { token: user.token });
        return (
          (fleet.body.nodes as Array<{ node_id: string; last_seen_at: string | null }>).find((each) => each.node_id === node.node_id)
            ?.last_seen_at ?? undefined
        );
      }, 'the poll to be held');
      const resumedAt = Date.now();
      expect((await call(`/v1/swarm/nodes/${node.node_id}/resume`, { method: 'POST', token: user.token })).status).toBe(200);
      expect((await held).body.runs.map((run: { run_id: string }) => run.run_id)).toEqual([started.body.run_id]);
      // Well inside the 30 s hold: woken, not ended by it.
      expect(Date.now() - resumedAt).toBeLessThan(20_000);
    } finally {
      await holding.close();
    }
  });

  it("another user's node, an unknown one, a removed one: 404, and nothing changes", async () => {
    const owner = await paidUser(service, 0);
    const stranger = await paidUser(service, 0);
    const node = await servingNode(owner);
    for (const action of ['drain', 'resume'] as const) {
      const foreign = await drain(stranger, node, action);
      expect(foreign.status, foreign.text).toBe(404);
      expect(foreign.body).toMatchObject({ code: 'not_found', detail: `you have no node ${node.node_id}` });
      const unknown = await drain(owner, '3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14', action);
      expect(unknown.status).toBe(404);
      expect(unknown.body.detail).toBe(foreign.body.detail.replace(node.node_id, '3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14'));
    }
    expect((await drain(owner, 'not-a-node')).status).toBe(400);
    expect((await api(`/v1/swarm/nodes/${node.node_id}/drain`, { method: 'POST' })).status).toBe(401);
    // A node's own credential is no user's: it cannot drain itself or another.
    expect((await api(`/v1/swarm/nodes/${node.node_id}/drain`, { method: 'POST', token: node.credential })).status).toBe(401);
    expect((await fleetNode(owner, node)).drained_at).toBeNull();
    const strangerAudit = await api('/v1/audit', { token: stranger.token });
    expect(JSON.stringify(strangerAudit.body)).not.toContain(node.node_id);
  });
});

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MovableClock } from '../helpers/clock.js';
import { recentToken, activatedSession, waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';
import { echoAnswer, enrollNode, serve, stopServingNodes, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { entriesOf, execute, paidUser } from './execute-fixtures.js';
import { UUID_V4, dbSnapshot, rowCount } from './support/paygate-support.js';

// A node's life at the service: enrolled with its deploy token, then removed by its user or once it has been away
// too long (docs/api.md "Removing a node"). One service; the tests that need time to pass move its clock.
const clock = new MovableClock();
const service = useSvcApi(() => ({ clock }));
// Registered after useSvcApi's, so run before it: the nodes stop before the service does.
afterAll(stopServingNodes);

describe('POST /v1/swarm/nodes/enroll', () => {
  let url: string;

  beforeAll(() => {
    url = `${service.baseUrl}/v1/swarm/nodes/enroll`;
  });

  const enroll = (token: string, init: { rawBody?: string; headers?: Record<string, string> } = {}) =>
    httpRequest(url, { method: 'POST', token, ...init });

  function expectInvalid(response: Awaited<ReturnType<typeof enroll>>, token?: string): void {
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(response.body.code).toBe('deploy_token_invalid');
    expect(response.body.detail).toBe('the deploy token is unknown, expired, revoked or already used');
    if (token !== undefined) expect(response.text.includes(token)).toBe(false);
  }

  it('enrolls a node once with the deploy token and records it', async () => {
    const email = uniqueEmail('node');
    const { session_id, deploy_token } = await activatedSession(service.baseUrl, email);
    const response = await enroll(deploy_token);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      node_id: expect.stringMatching(UUID_V4),
      node_credential: expect.stringMatching(/^svcn_[A-Za-z0-9_-]{43}$/),
      user_id: email,
      tier_id: 'svc_starter_agents',
      install_path: '/opt/svc/swarm-node',
      deploy_mode: 'bare_metal',
    });
    expect(
      service.db.prepare('SELECT session_id, user_id, tier_id, credential_hash FROM nodes WHERE node_id = ?').get(response.body.node_id),
    ).toEqual({
      session_id,
      user_id: email,
      tier_id: 'svc_starter_agents',
      // Only the credential's SHA-256 is kept: a copy of the database authenticates no node.
      credential_hash: createHash('sha256').update(response.body.node_credential).digest('hex'),
    });
    expect(JSON.stringify(dbSnapshot(service.db))).not.toContain(response.body.node_credential);

    const before = dbSnapshot(service.db);
    expectInvalid(await enroll(deploy_token), deploy_token);
    expect(dbSnapshot(service.db)).toEqual(before);
  });

  it.each([
    ['no body, no content type', {}],
    ['an empty body sent as application/json', { rawBody: '', headers: { 'content-type': 'application/json' } }],
    ['a JSON body, which is ignored', { rawBody: '{"hostname":"box-1"}', headers: { 'content-type': 'application/json' } }],
  ])('accepts %s', async (_label, init) => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('body'));
    const response = await enroll(deploy_token, init);
    expect(response.status, response.text).toBe(200);
  });

  it('refuses a text/plain body with 415 and keeps the token usable', async () => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('text'));
    const before = dbSnapshot(service.db);
    const response = await enroll(deploy_token, { rawBody: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(415);
    expect(response.body.code).toBe('unsupported_media_type');
    expect(dbSnapshot(service.db)).toEqual(before);
    expect((await enroll(deploy_token)).status).toBe(200);
  });

  it('enrolls an ephemeral node with {"ephemeral": true}; an ephemeral that is not a boolean is 400 and keeps the token usable', async () => {
    const { deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('ephemeral'));
    const before = dbSnapshot(service.db);
    const refused = await enroll(deploy_token, { rawBody: '{"ephemeral":"yes"}', headers: { 'content-type': 'application/json' } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_request', detail: expect.stringContaining('the deploy token was not used') });
    expect(dbSnapshot(service.db)).toEqual(before);
    const enrolled = await enroll(deploy_token, { rawBody: '{"ephemeral":true}', headers: { 'content-type': 'application/json' } });
    expect(enrolled.status, enrolled.text).toBe(200);
    expect(enrolled.body.ephemeral).toBe(true);
    expect(service.db.prepare('SELECT ephemeral, ephemeral_run_id FROM nodes WHERE node_id = ?').get(enrolled.body.node_id)).toEqual({
      ephemeral: 1,
      ephemeral_run_id: null,
    });
  });

  it('refuses a token past its 15 minutes, accepts it just before', async () => {
    const early = await activatedSession(service.baseUrl, uniqueEmail('early'));
    const late = await activatedSession(service.baseUrl, uniqueEmail('late'));
    clock.advance(15 * 60 * 1000 - 5_000);
    try {
      expect((await enroll(early.deploy_token)).status).toBe(200);
      clock.advance(5_001);
      const before = dbSnapshot(service.db);
      expectInvalid(await enroll(late.deploy_token), late.deploy_token);
      expect(dbSnapshot(service.db)).toEqual(before);
    } finally {
      clock.advance(-(15 * 60 * 1000 + 1));
    }
  });

  it("refuses a deploy token replaced by the user's next one (POST /v1/swarm/nodes/deploy-token), unused", async () => {
    const email = uniqueEmail('revoked');
    await activatedSession(service.baseUrl, email);
    const token = await recentToken(service.baseUrl, email, 'svc_starter_agents');
    const ask = () => apiClient(service.baseUrl).post('/v1/swarm/nodes/deploy-token', undefined, { token });
    const first = await ask();
    const second = await ask();
    expect([first.status, second.status]).toEqual([201, 201]);
    expectInvalid(await enroll(first.body.deploy_token), first.body.deploy_token);
    expect((await enroll(second.body.deploy_token)).status).toBe(200);
  });

  it('lets exactly one of ten concurrent enrolls with one token through', async () => {
    const { session_id, deploy_token } = await activatedSession(service.baseUrl, uniqueEmail('race'));
    const nodesBefore = rowCount(service.db, 'nodes');
    const responses = await Promise.all(Array.from({ length: 10 }, () => enroll(deploy_token)));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 401)).toHaveLength(9);
    expect(rowCount(service.db, 'nodes')).toBe(nodesBefore + 1);
    expect(service.db.prepare('SELECT count(*) AS n FROM nodes WHERE session_id = ?').get(session_id)).toEqual({ n: 1 });
  });
});

describe('removing a node: by its user (DELETE /v1/swarm/nodes/{node_id}) or once it is stale', () => {
  const AGENT = 'agent_ops_monitor_004';
  const LEASE_MS = 45_000;
  const DAY_MS = 86_400_000;
  const api = (path: string, init: Parameters<typeof httpRequest>[1] = {}) => httpRequest(`${service.baseUrl}${path}`, init);
  const remove = (nodeId: string, token?: string) =>
    api(`/v1/swarm/nodes/${nodeId}`, { method: 'DELETE', ...(token === undefined ? {} : { token }) });
  const poll = (node: EnrolledTestNode) =>
    api('/v1/swarm/nodes/poll', {
      method: 'POST',
      token: node.credential,
      body: { hostname: 'box', version: 'test', capacity: 0, running: [], wait_seconds: 0 },
    });
  const fleetOf = async (token: string): Promise<string[]> =>
    ((await api('/v1/swarm/nodes', { token })).body.nodes as Array<{ node_id: string }>).map((node) => node.node_id);
  const nodeRow = (nodeId: string) =>
    service.db.prepare('SELECT removed_at FROM nodes WHERE node_id = ?').get(nodeId) as { removed_at: number | null };
  const agentsOf = (nodeId: string) => service.db.prepare('SELECT agent_id FROM node_agents WHERE node_id = ?').all(nodeId);
  const runRow = (runId: string) =>
    service.db.prepare('SELECT * FROM runs WHERE run_id = ?').get(runId) as Record<string, unknown> & {
      status: string;
      output_json: string;
    };

  function expectRemoved(response: Awaited<ReturnType<typeof poll>>, node: EnrolledTestNode): void {
    expect(response.status, response.text).toBe(410);
    expect(response.body).toMatchObject({
      code: 'node_removed',
      node_id: node.node_id,
      remedy: expect.stringContaining('swarm-node install'),
    });
    expect(response.body.detail).toMatch(
      new RegExp(`^node ${node.node_id} was removed from its user's nodes at .+; its credential no longer works$`),
    );
    expect(response.text).not.toContain(node.credential);
  }

  it('by its user, while online: gone from the fleet, its agents withdrawn, its credential answered 410; its held run refunded once, a settled run untouched', async () => {
    const user = await paidUser(service, 100);
    let answered = 0;
    // The first run is answered at once; the second is held until the node is gone, and never answered.
    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), {
      agents: [AGENT],
      answer: (run) => (answered++ === 0 ? echoAnswer(run) : new Promise(() => undefined)),
    });
    const settled = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    expect(settled.body).toMatchObject({ status: 'succeeded', charged_cents: 4 });
    const held = await execute(service, user.token, { user_id: user.email, agent_id: AGENT }, undefined, { prefer: 'respond-async' });
    await waitFor(async () => (node.received.length === 2 ? true : undefined), 'the node holding the second run');
    const settledBefore = runRow(settled.body.run_id);

    const removed = await remove(node.node_id, user.token);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body).toEqual({ node_id: node.node_id, removed_at: expect.any(String), was_online: true, agents_withdrawn: [AGENT] });
    expect(await fleetOf(user.token)).toEqual([]);
    expect(agentsOf(node.node_id)).toEqual([]);
    const refused = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'no_node_available', detail: expect.stringContaining('you have no node') });
    expectRemoved(await poll(node), node);
    // A repeat (its answer lost) is answered as the removal was.
    expect((await remove(node.node_id, user.token)).body).toEqual({ ...removed.body, agents_withdrawn: [] });
    await node.stop();

    // Its polls refused, the held run's lease runs out: its attempt ends node_lost; the ops monitor is retry-safe, so
    // the run would wait for another node, but none of the user's could ever take it: failed, refunded once.
    clock.advance(LEASE_MS + 1000);
    try {
      await waitFor(async () => (runRow(held.body.run_id).status === 'failed' ? true : undefined), 'the held run failed');
    } finally {
      clock.advance(-(LEASE_MS + 1000));
    }
    expect(JSON.parse(runRow(held.body.run_id).output_json)).toMatchObject({ error: 'not_picked_up' });
    expect(service.db.prepare('SELECT attempt, error FROM run_attempts WHERE run_id = ?').all(held.body.run_id)).toEqual([
      { attempt: 1, error: 'node_lost' },
    ]);
    expect(entriesOf(service, user.email).filter((entry) => entry.kind === 'refund')).toEqual([
      { kind: 'refund', amount_cents: 4, run_id: held.body.run_id },
    ]);
    expect(runRow(settled.body.run_id)).toEqual(settledBefore);
    expect((await api('/v1/swarm/wallet', { token: user.token })).body.balance_cents).toBe(96);
  });

  it("another user's node is the same 404 as an unknown one, and stays; a malformed id is 400, a node credential 401", async () => {
    const owner = await paidUser(service, 0);
    const node = await enrollNode(service.baseUrl, owner.email);
    const stranger = await paidUser(service, 0);
    const unknownId = '6f1c2a4e-0b7d-4c55-9a3e-2d8f1b6c7e90';
    const theirs = await remove(node.node_id, stranger.token);
    const unknown = await remove(unknownId, stranger.token);
    const withoutId = (body: Record<string, unknown>, id: string) => ({ ...body, detail: String(body.detail).replace(id, '<id>') });
    expect([theirs.status, unknown.status]).toEqual([404, 404]);
    expect(withoutId(theirs.body, node.node_id)).toEqual(withoutId(unknown.body, unknownId));
    expect(theirs.body).toMatchObject({ code: 'not_found', detail: `you have no node ${node.node_id}` });
    expect(nodeRow(node.node_id)).toEqual({ removed_at: null });
    expect(await fleetOf(owner.token)).toEqual([node.node_id]);
    expect((await remove('not-a-node', owner.token)).body.code).toBe('invalid_request');
    expect((await remove(node.node_id, node.credential)).status).toBe(401);
    expect((await remove(node.node_id)).status).toBe(401);
    expect(nodeRow(node.node_id)).toEqual({ removed_at: null });
  });

  it('once stale: a node neither seen nor running anything of its own for 14 days is removed by the sweep; the others stay', async () => {
    const user = await paidUser(service, 100);
    const [away, never, polled, ranOwn] = (await Promise.all([0, 1, 2, 3].map(() => enrollNode(service.baseUrl, user.email)))) as [
      EnrolledTestNode,
      EnrolledTestNode,
      EnrolledTestNode,
      EnrolledTestNode,
    ];
    expect((await poll(away)).status).toBe(200);
    expect((await api(`/v1/swarm/nodes/self/agents/${AGENT}`, { method: 'PUT', token: away.credential })).status).toBe(200);
    const moved = { ms: 0 };
    const advance = (ms: number): void => {
      clock.advance(ms);
      moved.ms += ms;
    };
    try {
      advance(7 * DAY_MS);
      expect((await poll(polled)).status).toBe(200);
      // A run of its own (swarm-node run on its host) with its credential: leased to it at once, reported by it.
      const own = await execute(service, ranOwn.credential, { user_id: user.email, agent_id: AGENT });
      expect(own.status, own.text).toBe(202);
      const reported = await api(`/v1/swarm/runs/${own.body.run_id}/result`, {
        method: 'POST',
        token: ranOwn.credential,
        body: { lease_id: own.body.lease.lease_id, status: 'succeeded', output: {} },
      });
      expect(reported.status, reported.text).toBe(200);

      advance(8 * DAY_MS);
      await waitFor(
        async () => (nodeRow(away.node_id).removed_at !== null && nodeRow(never.node_id).removed_at !== null ? true : undefined),
        'the stale sweep',
      );
      expect([nodeRow(polled.node_id), nodeRow(ranOwn.node_id)]).toEqual([{ removed_at: null }, { removed_at: null }]);
      expect((await fleetOf(user.token)).sort()).toEqual([polled.node_id, ranOwn.node_id].sort());
      expect(agentsOf(away.node_id)).toEqual([]);
      expectRemoved(await poll(away), away);
      expectRemoved(await api('/v1/swarm/nodes/self/agents', { token: never.credential }), never);
      const pinned = await execute(service, user.token, { user_id: user.email, agent_id: AGENT, node_id: away.node_id });
      expect(pinned.body).toMatchObject({ code: 'no_node_available', detail: expect.stringContaining(`you have no node ${away.node_id}`) });
    } finally {
      clock.advance(-moved.ms);
    }
  });
});

// Scopes (docs/api.md "Scopes"): a node credential does the node's own work and nothing else. A node taken over by
// an attacker can poll, report, renew, read its own runs and their bundles, and read its user's balance; it can never
// become the user (no JWT), upload, mint a deploy token, list or remove nodes, or send runs to another node.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MERCHANT_ID, mailedCode } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { archiveOf, manifestOf } from '../helpers/agent-archives.js';
import { paidUserWithNode, execute, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { dbSnapshot } from './support/paygate-support.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The database as a refused call must leave it. A test's node goes on polling meanwhile and notes when it was last
 * seen (at most once a second, so a slow machine sees it move): that is no change a refused call made.
 */
function stateOf(db: Parameters<typeof dbSnapshot>[0]): Record<string, unknown[]> {
  const tables = dbSnapshot(db);
  return { ...tables, nodes: (tables.nodes as Array<Record<string, unknown>>).map(({ last_seen_at: _seen, ...node }) => node) };
}

const AGENT = 'agent_ops_monitor_004';

const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
afterAll(stopNodes);

describe('a node credential does node work only', () => {
  const call = (
    path: string,
    token: string,
    init: { method?: string; body?: unknown; rawBody?: Buffer; headers?: Record<string, string> } = {},
  ) => httpRequest(`${service.baseUrl}${path}`, { ...init, token });

  it('never gets a JWT: issue-token with the node credential as its bearer issues nothing (it needs the inbox code)', async () => {
    const user = await paidUserWithNode(service, 0, { agents: [AGENT] });
    const before = stateOf(service.db);
    const response = await call('/v1/auth/issue-token', user.node.credential, {
      body: { status: 'CONFIRMED', offer_id: 'svc_starter_agents', customer_email: user.email, merchant_id: MERCHANT_ID },
    });
    expect(response.status).toBe(400);
    expect(response.text).not.toMatch(/eyJ/);
    expect(stateOf(service.db)).toEqual(before);
    // A code mailed to the user is the user's: the node cannot read the inbox, and its credential adds nothing.
    const { challenge_id } = await mailedCode(service.baseUrl, user.email);
    const guessed = await call('/v1/auth/issue-token', user.node.credential, {
      body: {
        status: 'CONFIRMED',
        offer_id: 'svc_starter_agents',
        customer_email: user.email,
        merchant_id: MERCHANT_ID,
        challenge_id,
        code: '0000-0000',
      },
    });
    expect(guessed.status).toBe(401);
    expect(guessed.body.code).toBe('email_code_invalid');
  });

  it("is refused (401) by every endpoint of the user's: upload, deploy token, the fleet, removal, rotation, docs, audit, sign-out", async () => {
    const user = await paidUserWithNode(service, 0, { agents: [AGENT] });
    const other = await enrollNode(service.baseUrl, user.email);
    const archive = await archiveOf([
      { name: 'agent.json', data: manifestOf(AGENT, '9.0.0') },
      { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
    ]);
    // Both enrolments' mails to the user go out after their answers: sent before the snapshot, not during the calls.
    const enrolMails = () =>
      service.db
        .prepare("SELECT count(*) FROM sandbox_outbox WHERE to_address = ? AND subject LIKE 'A node joined%'")
        .pluck()
        .get(user.email) as number;
    await waitFor(async () => (enrolMails() === 2 ? true : undefined), "both enrolments' mails");
    const before = stateOf(service.db);
    const attempts = [
      call(`/v1/swarm/agents/${AGENT}/versions`, user.node.credential, {
        method: 'POST',
        rawBody: archive,
        headers: { 'content-type': 'application/gzip' },
      }),
      call(`/v1/swarm/agents/${AGENT}/current`, user.node.credential, { method: 'PUT', body: { version: '9.0.0' } }),
      call('/v1/swarm/nodes/deploy-token', user.node.credential, { method: 'POST' }),
      call('/v1/swarm/nodes', user.node.credential),
      call(`/v1/swarm/nodes/${other.node_id}`, user.node.credential, { method: 'DELETE' }),
      call(`/v1/swarm/nodes/${other.node_id}/credential`, user.node.credential, { method: 'POST' }),
      call('/v1/docs/starter-agents', user.node.credential),
      call('/v1/audit', user.node.credential),
      call('/v1/auth/logout', user.node.credential, { method: 'POST', body: { everywhere: true } }),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status, response.text).toBe(401);
      expect(response.body.code).toBe('unauthorized');
      expect(response.text).not.toContain(user.node.credential);
    }
    expect(stateOf(service.db)).toEqual(before);
  });

  it('starts runs on its own node only: naming another node is 403 and charges nothing', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const other = await enrollNode(service.baseUrl, user.email);
    const before = stateOf(service.db);
    const response = await execute(service, user.node.credential, { user_id: user.email, agent_id: AGENT, node_id: other.node_id });
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ code: 'forbidden', detail: expect.stringMatching(/its own node only/) });
    expect(stateOf(service.db)).toEqual(before);
  });

  it("reads the runs it was handed, never its user's others, and its user's balance (the daemon's resume after a 402)", async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const bystander = await enrollNode(service.baseUrl, user.email);
    const run = await execute(service, user.token, { user_id: user.email, agent_id: AGENT }, randomUUID());
    expect(run.status, run.text).toBe(200);
    expect((await call(`/v1/swarm/runs/${run.body.run_id}`, user.node.credential)).status).toBe(200);
    const notHis = await call(`/v1/swarm/runs/${run.body.run_id}`, bystander.credential);
    expect(notHis.status).toBe(404);
    expect(notHis.body.code).toBe('run_not_found');
    expect((await call(`/v1/swarm/runs/${run.body.run_id}`, user.token)).status).toBe(200);
    const wallet = await call('/v1/swarm/wallet', bystander.credential);
    expect(wallet.status).toBe(200);
    expect(wallet.body).toMatchObject({ user_id: user.email, balance_cents: 96 });
  });
});

describe('an access token is refused where a node credential is the only one accepted', () => {
  it("the user's JWT neither polls nor reports as a node (401): a JWT copied from a disk cannot play a node", async () => {
    const user = await paidUserWithNode(service, 0, { agents: [AGENT] });
    const poll = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/poll`, {
      token: user.token,
      body: { hostname: 'x', version: 't', capacity: 1, running: [] },
    });
    expect(poll.status).toBe(401);
    const result = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${randomUUID()}/result`, {
      token: user.token,
      body: { lease_id: randomUUID(), status: 'succeeded', output: {} },
    });
    expect(result.status).toBe(401);
  });
});

// Secrets (docs/api.md "Secrets"): a user's named values, kept encrypted at rest, read back by name and date only,
// changed with a recent sign-in and audited, and handed with each run to the node that runs it: exactly the names
// the run's agent declares in agent.json, of those the user has, with the poll or with the node's own run's lease.
import { afterAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { archiveOf, manifestOf } from '../helpers/agent-archives.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { startSvcApi, useSvcApi, type TestService } from '../helpers/svc-api.js';
import { keyId } from '../../src/api/secrets.js';
import { randomBytes } from 'node:crypto';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';
import { mintToken } from '../helpers/tokens.js';
import { MovableClock } from '../helpers/clock.js';
import { uniqueEmail } from '../helpers/temp.js';
import { credit, execute, paidUser, TEST_RUN_TIMING } from './execute-fixtures.js';

const AGENT = 'agent_ops_monitor_004';
const VALUE = 'sk_live_LEAKCHECK_42';

describe('secrets', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ clock, runTiming: TEST_RUN_TIMING });
  afterAll(stopServingNodes);
  const call = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const put = (token: string, name: string, value: unknown) => call(`/v1/swarm/secrets/${name}`, token, { method: 'PUT', body: { value } });

  it('sets, lists by name and date only, changes and removes a secret, each change audited; the value is sealed at rest', async () => {
    const user = await paidUser(service, 0);
    const created = await put(user.token, 'OPENAI_API_KEY', VALUE);
    expect(created.status, created.text).toBe(200);
    expect(created.body).toMatchObject({ name: 'OPENAI_API_KEY', created: true });
    clock.advance(1000);
    const changed = await put(user.token, 'OPENAI_API_KEY', `${VALUE}_v2`);
    expect(changed.body).toMatchObject({ name: 'OPENAI_API_KEY', created: false, created_at: created.body.created_at });
    expect(changed.body.updated_at > created.body.updated_at).toBe(true);
    const listed = await call('/v1/swarm/secrets', user.token);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      secrets: [{ name: 'OPENAI_API_KEY', created_at: created.body.created_at, updated_at: changed.body.updated_at }],
    });
    // Nowhere in an answer, nor in the database in clear, in base64 or hex.
    for (const text of [created.text, changed.text, listed.text]) expect(text).not.toContain('LEAKCHECK');
    const rows = service.db.prepare('SELECT * FROM user_secrets WHERE user_id = ?').all(user.email) as Array<Record<string, string>>;
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows);
    for (const form of [VALUE, Buffer.from(VALUE).toString('base64'), Buffer.from(VALUE).toString('hex')])
      expect(stored).not.toContain(form);
    expect(rows[0]!.key_id).toBe(service.ctx.vault.currentKeyId);

    const removed = await call('/v1/swarm/secrets/OPENAI_API_KEY', user.token, { method: 'DELETE' });
    expect(removed.body).toEqual({ name: 'OPENAI_API_KEY', removed: true });
    expect((await call('/v1/swarm/secrets', user.token)).body).toEqual({ secrets: [] });
    const audit = await call('/v1/audit', user.token);
    const changes = (audit.body.events as Array<{ kind: string; detail: Record<string, unknown> }>)
      .filter((event) => event.kind === 'secret_changed')
      .map((event) => event.detail);
    expect(changes).toEqual([
      { name: 'OPENAI_API_KEY', change: 'removed' },
      { name: 'OPENAI_API_KEY', change: 'updated' },
      { name: 'OPENAI_API_KEY', change: 'created' },
    ]);
    expect(audit.text).not.toContain('LEAKCHECK');
  });

  it('refuses bad names and values, unknown fields, an older sign-in and a node credential with problem+json, and changes nothing', async () => {
    const user = await paidUser(service, 0);
    const node = await enrollNode(service.baseUrl, user.email);
    expect((await put(user.token, 'KEEP_ME', VALUE)).status).toBe(200);
    const before = tablesOf(service);
    const refusals: Array<[Promise<Awaited<ReturnType<typeof put>>>, number, string]> = [
      [put(user.token, 'lower_case', VALUE), 400, 'invalid_request'],
      [put(user.token, 'LD_PRELOAD', VALUE), 400, 'invalid_request'],
      [put(user.token, 'SWARM_RUN_ID', VALUE), 400, 'invalid_request'],
      [put(user.token, 'PATH', VALUE), 400, 'invalid_request'],
      [put(user.token, 'SHORT', 'abc'), 400, 'invalid_request'],
      [put(user.token, 'NUL', 'abc\u0000defg'), 400, 'invalid_request'],
      [put(user.token, 'NUMBER', 12345), 400, 'invalid_request'],
      [put(user.token, 'HUGE', 'x'.repeat(16 * 1024 + 1)), 400, 'invalid_request'],
      [call('/v1/swarm/secrets/EXTRA', user.token, { method: 'PUT', body: { value: VALUE, note: 'x' } }), 400, 'invalid_request'],
      [call('/v1/swarm/secrets/KEEP_ME', user.token, { method: 'PUT' }), 400, 'invalid_request'],
      [put(node.credential, 'FROM_NODE', VALUE), 401, 'unauthorized'],
      [call('/v1/swarm/secrets', node.credential), 401, 'unauthorized'],
      [call('/v1/swarm/secrets/NEVER_SET', user.token, { method: 'DELETE' }), 404, 'not_found'],
    ];
    for (const [pending, status, code] of refusals) {
      const response = await pending;
      expect(response.status, response.text).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.body.code).toBe(code);
      expect(response.text).not.toContain('LEAKCHECK');
    }
    // A sign-in older than 15 minutes reads but does not change.
    clock.advance(16 * 60 * 1000);
    try {
      expect((await put(user.token, 'KEEP_ME', 'another-value')).body.code).toBe('step_up_required');
      expect((await call('/v1/swarm/secrets/KEEP_ME', user.token, { method: 'DELETE' })).body.code).toBe('step_up_required');
      expect((await call('/v1/swarm/secrets', user.token)).status).toBe(200);
    } finally {
      clock.advance(-16 * 60 * 1000);
    }
    expect(tablesOf(service)).toEqual(before);
  });

  it("another user's secret is never listed, handed or removed: 404, as for none", async () => {
    const owner = await paidUser(service, 0);
    const other = await paidUser(service, 0);
    expect((await put(owner.token, 'OWNERS_KEY', VALUE)).status).toBe(200);
    expect((await call('/v1/swarm/secrets', other.token)).body).toEqual({ secrets: [] });
    const removal = await call('/v1/swarm/secrets/OWNERS_KEY', other.token, { method: 'DELETE' });
    expect(removal.status).toBe(404);
    expect((await call('/v1/swarm/secrets', owner.token)).body.secrets).toHaveLength(1);
  });

  it('hands the node exactly the declared secrets the user has, with the poll and with its own run; none to an agent that declares none', async () => {
    const user = await paidUser(service, 1000);
    const upload = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, {
      method: 'POST',
      token: user.token,
      headers: { 'content-type': 'application/gzip' },
      rawBody: await archiveOf([
        { name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { secrets: ['API_KEY', 'NOT_SET'] }) },
        { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
      ]),
    });
    expect(upload.status, upload.text).toBe(201);
    for (const [name, value] of [
      ['API_KEY', VALUE],
      ['UNDECLARED', 'must-not-travel'],
    ] as const)
      expect((await put(user.token, name, value)).status).toBe(200);

    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, user.email), { agents: [AGENT, 'agent_svc_skills_005'] });
    const declaring = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    expect(declaring.status, declaring.text).toBe(200);
    const plain = await execute(service, user.token, {
      user_id: user.email,
      agent_id: 'agent_svc_skills_005',
      input: { question: 'What is a lease?' },
    });
    expect(plain.status, plain.text).toBe(200);
    const handed = (runId: string): AssignedRun => node.received.find((run) => run.run_id === runId)!;
    expect(handed(declaring.body.run_id).secrets).toEqual({ API_KEY: VALUE });
    expect(handed(plain.body.run_id).secrets).toBeUndefined();
    // What the run shows afterwards never holds a value.
    expect(JSON.stringify(await call(`/v1/swarm/runs/${declaring.body.run_id}`, user.token))).not.toContain('LEAKCHECK');
    await node.stop();

    // A node's own run: the lease execute answers it with carries them.
    const own = await execute(service, node.credential, { user_id: user.email, agent_id: AGENT });
    expect(own.status, own.text).toBe(202);
    expect(own.body.lease.secrets).toEqual({ API_KEY: VALUE });
  });

  it('a value changed while a run waits in the queue is handed as it is when the run starts', async () => {
    const user = await paidUser(service, 1000, uniqueEmail('queued'));
    await credit(service, user.email, 0);
    const upload = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, {
      method: 'POST',
      token: user.token,
      headers: { 'content-type': 'application/gzip' },
      rawBody: await archiveOf([
        { name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { secrets: ['API_KEY'] }) },
        { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
      ]),
    });
    expect(upload.status).toBe(201);
    expect((await put(user.token, 'API_KEY', 'first-value')).status).toBe(200);
    const enrolled = await enrollNode(service.baseUrl, user.email);
    // Online, then away: the run waits for it.
    const first = await serve(service.baseUrl, enrolled, { agents: [AGENT], capacity: 0 });
    const queued = await execute(service, user.token, { user_id: user.email, agent_id: AGENT }, undefined, { prefer: 'respond-async' });
    expect(queued.body.status).toBe('queued');
    await first.stop();
    expect((await put(user.token, 'API_KEY', 'second-value')).status).toBe(200);
    const node = await serve(service.baseUrl, enrolled, { agents: [AGENT] });
    const done = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${queued.body.run_id}?wait=20`, { token: user.token });
    expect(done.body.status).toBe('succeeded');
    expect(node.received.find((run) => run.run_id === queued.body.run_id)?.secrets).toEqual({ API_KEY: 'second-value' });
  });
});

describe('the secrets key rotated (docs/operations.md "Secrets at rest")', () => {
  afterAll(stopServingNodes);

  it('reads values under the previous key, seals them again under the new one, and a key dropped too soon leaves them unset', async () => {
    const dataDir = tempDir('svc-rotation-');
    const [k1, k2, k3] = [randomBytes(32), randomBytes(32), randomBytes(32)];
    const start = (current: Buffer, previous: Buffer[] = []) =>
      startSvcApi({
        dataDir,
        runTiming: TEST_RUN_TIMING,
        env: {
          SVC_SECRETS_KEY: current.toString('base64url'),
          ...(previous.length === 0 ? {} : { SVC_SECRETS_PREVIOUS_KEYS: previous.map((key) => key.toString('base64url')).join(',') }),
        },
      });
    const rows = (service: TestService) =>
      service.db.prepare('SELECT key_id FROM user_secrets UNION ALL SELECT secret_key_id FROM webhook_endpoints').all() as Array<{
        key_id: string;
      }>;
    let service = await start(k1);
    const { token } = await mintToken(service, 'rotation@example.com');
    expect(
      (await httpRequest(`${service.baseUrl}/v1/swarm/secrets/API_KEY`, { method: 'PUT', token, body: { value: VALUE } })).status,
    ).toBe(200);
    expect(
      (await httpRequest(`${service.baseUrl}/v1/swarm/webhooks`, { method: 'POST', token, body: { url: 'https://hooks.example.com/svc' } }))
        .status,
    ).toBe(201);
    expect(rows(service).map((row) => row.key_id)).toEqual([keyId(k1), keyId(k1)]);
    await service.close();

    // The new key, the old one still in the ring: the sweep at start seals both values again under the new key.
    service = await start(k2, [k1]);
    try {
      await waitFor(
        async () => (rows(service).every((row) => row.key_id === keyId(k2)) ? true : undefined),
        'the values sealed again under the new key',
      );
      expect(await secretValues(service, 'rotation@example.com')).toEqual({ API_KEY: VALUE });
    } finally {
      await service.close();
    }
    // The old key dropped: everything still opens.
    service = await start(k2);
    try {
      const runsOpen = await secretValues(service, 'rotation@example.com');
      expect(runsOpen).toEqual({ API_KEY: VALUE });
    } finally {
      await service.close();
    }
    // The current key dropped too soon (neither current nor previous): the value reads as unset, nothing breaks.
    service = await start(k3);
    try {
      expect(await secretValues(service, 'rotation@example.com')).toEqual({});
    } finally {
      await service.close();
    }
  });
});

/** The values a run of an agent declaring API_KEY would be handed, as the dispatch reads them. */
async function secretValues(service: TestService, userId: string): Promise<Record<string, string>> {
  const { createSecretStore } = await import('../../src/api/user-secrets/secret-store.js');
  return createSecretStore(service.ctx.store, service.ctx.vault, service.ctx.clock).valuesOf(userId, ['API_KEY']);
}

/** What these requests could change (other tests' nodes keep polling, so the whole database moves meanwhile). */
function tablesOf(service: { db: { prepare(sql: string): { all(): unknown[] } } }): Record<string, unknown[]> {
  return Object.fromEntries(
    ['user_secrets', 'audit_events'].map((table) => [table, service.db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all()]),
  );
}

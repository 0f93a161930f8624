// Agent upload at the service (docs/api.md "Agent upload"): versions, idempotent re-upload, rollback, every bad
// bundle refused with nothing stored, the tier and JWT checks, the bundle download of a node, and execute pinning
// the current version with its input checked before the charge. Real svc-api over HTTP.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_BUNDLE_BYTES } from '../../src/contract/agent-bundle.js';
import { archiveOf, manifestOf, sha256, validArchive, type ArchiveEntry } from '../helpers/agent-archives.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const service = useSvcApi();
afterAll(stopServingNodes);

const upload = (token: string | undefined, bytes: Buffer | string, agentId = AGENT, contentType = 'application/gzip') =>
  httpRequest(`${service.baseUrl}/v1/swarm/agents/${agentId}/versions`, {
    method: 'POST',
    rawBody: bytes,
    headers: { 'content-type': contentType },
    ...(token === undefined ? {} : { token }),
  });
const versions = (token: string, agentId = AGENT) => httpRequest(`${service.baseUrl}/v1/swarm/agents/${agentId}/versions`, { token });
const setCurrent = (token: string, body: unknown) =>
  httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'PUT', body, token });

describe('uploading versions of an agent', () => {
  it('stores each version by its SHA-256, makes it current, treats the same bytes as the same version, and rolls back', async () => {
    const token = await signIn(service.baseUrl, uniqueEmail('upload'));
    const v1 = await validArchive(AGENT, '1.0.0', { v: 1 });
    const first = await upload(token, v1);
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({
      agent_id: AGENT,
      version: '1.0.0',
      digest: sha256(v1),
      size_bytes: v1.length,
      files: 2,
      current: true,
      created: true,
    });

    const again = await upload(token, v1);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ digest: sha256(v1), created: false, current: true, uploaded_at: first.body.uploaded_at });

    const v2 = await validArchive(AGENT, '1.1.0', { v: 2 });
    expect((await upload(token, v2)).status).toBe(201);
    const listed = await versions(token);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.current).toMatchObject({ version: '1.1.0', digest: sha256(v2) });
    expect(listed.body.versions.map((v: { version: string; current: boolean }) => [v.version, v.current])).toEqual([
      ['1.1.0', true],
      ['1.0.0', false],
    ]);

    // The same version label with other bytes is never a replacement.
    const clash = await upload(token, await validArchive(AGENT, '1.1.0', { v: 'other' }));
    expect(clash.status, clash.text).toBe(409);
    expect(clash.body).toMatchObject({ code: 'version_exists', digest: sha256(v2) });

    const rolled = await setCurrent(token, { version: '1.0.0' });
    expect(rolled.status, rolled.text).toBe(200);
    expect(rolled.body.current).toMatchObject({ version: '1.0.0', digest: sha256(v1) });
    const byDigest = await setCurrent(token, { digest: sha256(v2) });
    expect(byDigest.body.current.version).toBe('1.1.0');
    expect((await setCurrent(token, { version: '9.9.9' })).body.code).toBe('not_found');
    expect((await setCurrent(token, { version: '1.0.0', digest: sha256(v1) })).status).toBe(400);
    expect((await setCurrent(token, {})).status).toBe(400);

    // Back to the built-in agent: none current, the versions stay; again is no error; a stranger clears only theirs.
    const cleared = await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'DELETE', token });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.current).toBeNull();
    expect(cleared.body.versions).toHaveLength(2);
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'DELETE', token })).status).toBe(200);
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'DELETE' })).status).toBe(401);
    expect((await setCurrent(token, { version: '1.1.0' })).body.current.version).toBe('1.1.0');

    // Another user sees none of it.
    const stranger = await signIn(service.baseUrl, uniqueEmail('stranger'));
    expect((await versions(stranger)).body).toEqual({ agent_id: AGENT, current: null, versions: [] });
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'DELETE', token: stranger })).status).toBe(
      200,
    );
    expect((await versions(token)).body.current.version).toBe('1.1.0');
  });
});

describe('bad uploads are refused and store nothing', () => {
  const manifest = { name: 'agent.json', data: manifestOf(AGENT, '1.0.0') };
  const script: ArchiveEntry = { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 };
  const cases: Array<[string, () => Promise<Buffer | string>, number, string, RegExp]> = [
    [
      'not an archive',
      async () => 'this is not a tar archive at all, not even close'.repeat(20),
      422,
      'bundle_invalid',
      /not a tar archive|agent.json/,
    ],
    [
      'a broken gzip stream',
      async () => Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0]), Buffer.alloc(40, 7)]),
      422,
      'bundle_invalid',
      /gzip/,
    ],
    ['no agent.json', async () => archiveOf([script]), 422, 'bundle_invalid', /agent.json: is missing/],
    [
      'agent.json that is not JSON',
      async () => archiveOf([{ name: 'agent.json', data: '{agent_id:' }, script]),
      422,
      'bundle_invalid',
      /not JSON/,
    ],
    [
      'an agent_id not in the catalog',
      async () => archiveOf([{ name: 'agent.json', data: manifestOf('agent_nope_001', '1.0.0') }, script]),
      422,
      'bundle_invalid',
      /agent_id.*is neither an agent_id of the catalog/,
    ],
    [
      'a manifest for another agent than the path',
      async () => archiveOf([{ name: 'agent.json', data: manifestOf('agent_dev_review_012', '1.0.0') }, script]),
      422,
      'bundle_invalid',
      /is for agent_dev_review_012/,
    ],
    [
      'an entry that is not in the bundle',
      async () => archiveOf([{ name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { entry: ['run.sh'] }) }]),
      422,
      'bundle_invalid',
      /entry\/0.*not a file of the bundle/,
    ],
    [
      'a schema keyword JSON Schema 2020-12 does not have',
      async () =>
        archiveOf([
          {
            name: 'agent.json',
            data: manifestOf(AGENT, '1.0.0', { input_schema: { type: 'object', properties: { a: { type: 'string', minLenght: 1 } } } }),
          },
          script,
        ]),
      422,
      'bundle_invalid',
      /input_schema\/properties\/a\/minLenght.*not JSON Schema 2020-12/,
    ],
    [
      'a schema referring to nothing',
      async () =>
        archiveOf([
          { name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { input_schema: { type: 'object', $ref: '#/$defs/x' } }) },
          script,
        ]),
      422,
      'bundle_invalid',
      /resolve reference #\/\$defs\/x/,
    ],
    [
      'an unknown manifest field',
      async () => archiveOf([{ name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { entrypoint: 'x' }) }, script]),
      422,
      'bundle_invalid',
      /entrypoint/,
    ],
    [
      'a network other than none or egress',
      async () => archiveOf([{ name: 'agent.json', data: manifestOf(AGENT, '1.0.0', { network: 'host' }) }, script]),
      422,
      'bundle_invalid',
      /network.*must be one of.*none.*egress/,
    ],
    [
      'a path climbing out with ..',
      async () => archiveOf([manifest, script, { name: '../escape.sh', data: 'x' }]),
      422,
      'bundle_invalid',
      /climbs out/,
    ],
    [
      'a .. inside a path',
      async () => archiveOf([manifest, script, { name: 'lib/../../escape.sh', data: 'x' }]),
      422,
      'bundle_invalid',
      /climbs out/,
    ],
    [
      'an absolute path',
      async () => archiveOf([manifest, script, { name: '/etc/cron.d/evil', data: 'x' }]),
      422,
      'bundle_invalid',
      /absolute/,
    ],
    [
      'a symlink',
      async () => archiveOf([manifest, script, { name: 'passwd', type: 'symlink', linkname: '/etc/passwd' }]),
      422,
      'bundle_invalid',
      /symlink/,
    ],
    [
      'a hard link',
      async () => archiveOf([manifest, script, { name: 'again.sh', type: 'link', linkname: 'main.sh' }]),
      422,
      'bundle_invalid',
      /is a link/,
    ],
    [
      'a device',
      async () => archiveOf([manifest, script, { name: 'tty', type: 'character-device' }]),
      422,
      'bundle_invalid',
      /character-device/,
    ],
    ['a fifo', async () => archiveOf([manifest, script, { name: 'pipe', type: 'fifo' }]), 422, 'bundle_invalid', /fifo/],
    ['a duplicate entry', async () => archiveOf([manifest, script, { ...script, data: 'other' }]), 422, 'bundle_invalid', /appears twice/],
    [
      'a duplicate spelled ./',
      async () => archiveOf([manifest, script, { name: './main.sh', data: 'other' }]),
      422,
      'bundle_invalid',
      /appears twice/,
    ],
    [
      'more than 1000 entries',
      async () => archiveOf([manifest, script, ...Array.from({ length: 1000 }, (_, i) => ({ name: `f${i}`, data: '' }))]),
      422,
      'bundle_invalid',
      /more than 1000 entries/,
    ],
    [
      'more than 20 MiB unpacked',
      async () => archiveOf([manifest, script, { name: 'zeros', data: Buffer.alloc(21 * 1024 * 1024) }]),
      413,
      'payload_too_large',
      /20 MiB/,
    ],
    [
      'more than 5 MiB packed',
      async () =>
        archiveOf(
          [
            manifest,
            script,
            { name: 'noise', data: Buffer.from(Array.from({ length: MAX_BUNDLE_BYTES + 1024 }, (_, i) => (i * 7919) % 251)) },
          ],
          { gzip: false },
        ),
      413,
      'payload_too_large',
      /5 MiB/,
    ],
  ];

  it.each(cases)('%s', async (_what, make, status, code, detail) => {
    const token = await signIn(service.baseUrl, uniqueEmail('bad-upload'));
    const answer = await upload(token, await make());
    expect(answer.status, answer.text).toBe(status);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.body.code).toBe(code);
    expect(JSON.stringify(answer.body)).toMatch(detail);
    expect((await versions(token)).body.versions).toEqual([]);
  });

  it('refuses a JSON body (415), an unknown agent (404), no JWT or a forged one (401), a node credential (401), and a tier without agent upload (403)', async () => {
    const email = uniqueEmail('gate');
    const token = await signIn(service.baseUrl, email);
    const good = await validArchive(AGENT, '1.0.0');
    expect((await upload(token, '{"agent_id": "x"}', AGENT, 'application/json')).body.code).toBe('unsupported_media_type');
    expect((await upload(token, await validArchive(AGENT, '1.0.0'), 'agent_nope_001')).body.code).toBe('agent_not_found');
    const none = await upload(undefined, good);
    expect([none.status, none.body.code]).toEqual([401, 'unauthorized']);
    const [header, payload, signature] = token.split('.');
    const forged = `${header}.${payload}.${signature!.slice(0, -4)}AAAA`;
    expect((await upload(forged, good)).status).toBe(401);
    const node = await enrollNode(service.baseUrl, email);
    expect((await upload(node.credential, good)).status).toBe(401);
    const walletOnly = await signIn(service.baseUrl, uniqueEmail('wallet-tier'), 'svc_pay_wallet_fund');
    const refused = await upload(walletOnly, good);
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body).toMatchObject({ code: 'forbidden', tiers: ['dev_portal_execution_billing', 'svc_starter_agents'] });
    expect((await versions(walletOnly)).status).toBe(403);
    expect((await versions(token)).body.versions).toEqual([]);
  });
});

describe('distribution and execute', () => {
  it("serves a bundle only to the uploader's nodes; pins runs to the current digest; checks the input before the charge", async () => {
    const email = uniqueEmail('pin');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const schema = {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: { name: { type: 'string', maxLength: 8 } },
    };
    const archive = await archiveOf([
      { name: 'agent.json', data: manifestOf(AGENT, '2.0.0', { input_schema: schema }) },
      { name: 'main.sh', data: '#!/bin/sh\necho {}\n', mode: 0o755 },
    ]);
    expect((await upload(token, archive)).status).toBe(201);
    const digest = sha256(archive);

    const node = await serve(service.baseUrl, await enrollNode(service.baseUrl, email), { agents: [AGENT] });
    // A node fetches only the bundles of runs it was handed (docs/api.md "Scopes"); none yet.
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/bundles/${digest}`, { token: node.credential })).status).toBe(404);
    const other = await enrollNode(service.baseUrl, uniqueEmail('other-node'));
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/bundles/${digest}`, { token: other.credential })).status).toBe(404);

    const execute = (input: unknown, key: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
        method: 'POST',
        token,
        headers: { 'idempotency-key': key },
        body: { user_id: email, agent_id: AGENT, input },
      });
    const wallet = async () => (await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents as number;
    for (const [input, path] of [
      [{}, '/input/name'],
      [{ name: 'far too long a name' }, '/input/name'],
      [{ name: 'Ada', extra: 1 }, '/input/extra'],
    ] as const) {
      const refused = await execute(input, randomUUID());
      expect(refused.status, refused.text).toBe(422);
      expect(refused.body).toMatchObject({ code: 'input_invalid', version: '2.0.0', digest });
      expect(refused.body.errors[0].path).toBe(path);
    }
    expect(await wallet()).toBe(100);
    expect(service.db.prepare('SELECT count(*) AS n FROM runs WHERE user_id = ?').get(email)).toEqual({ n: 0 });

    const accepted = await execute({ name: 'Ada' }, 'good-1');
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body).toMatchObject({ status: 'succeeded', bundle_digest: digest, charged_cents: 4 });
    await waitFor(async () => (node.received.length > 0 ? true : undefined), 'the run reaches the node');
    expect(node.received[0]).toMatchObject({ agent_id: AGENT, bundle_digest: digest });
    // Handed a run of it, the node fetches the bundle; the node of another user still cannot.
    const fetched = await fetch(`${service.baseUrl}/v1/swarm/bundles/${digest}`, {
      headers: { authorization: `Bearer ${node.credential}` },
    });
    expect(fetched.status).toBe(200);
    expect(sha256(Buffer.from(await fetched.arrayBuffer()))).toBe(digest);
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/bundles/${digest}`, { token: other.credential })).status).toBe(404);
  });
});

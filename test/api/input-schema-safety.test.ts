// An uploaded input_schema is a stranger's program the service runs at every execute (docs/api.md "Agent upload",
// "Input checked before the charge"): its patterns run on RE2, in linear time; a schema RE2 or Ajv cannot use is
// refused at upload; a check is bounded in time whatever the schema; and the run is charged and pinned against the
// version whose schema checked its input. Real svc-api over HTTP, on both engines.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { archiveOf, manifestOf, sha256 } from '../helpers/agent-archives.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, stopServingNodes } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const service = useSvcApi();
afterAll(stopServingNodes);

const bundleWith = (version: string, inputSchema: unknown) =>
  archiveOf([
    { name: 'agent.json', data: manifestOf(AGENT, version, { input_schema: inputSchema }) },
    { name: 'main.sh', data: '#!/bin/sh\ncat >/dev/null\necho {}\n', mode: 0o755 },
  ]);
const upload = (token: string, archive: Buffer) =>
  httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, {
    method: 'POST',
    rawBody: archive,
    headers: { 'content-type': 'application/gzip' },
    token,
  });

/** A signed-in, funded user with an online node serving the agent, so that execute reaches its input check. */
async function userWithNode(tag: string): Promise<{ email: string; token: string }> {
  const email = uniqueEmail(tag);
  const token = await signIn(service.baseUrl, email);
  await fundWallet(service.baseUrl, email, 1000);
  await serve(service.baseUrl, await enrollNode(service.baseUrl, email), { agents: [AGENT] });
  return { email, token };
}

const execute = (user: { email: string; token: string }, input: unknown) =>
  httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    token: user.token,
    headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
    body: { user_id: user.email, agent_id: AGENT, input },
  });
const balance = async (token: string): Promise<number> =>
  (await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token })).body.balance_cents;

/** `$defs` whose every level refers to the one below twice: checking a value against d40 is 2^40 checks. */
function fanOut(levels: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { d0: { type: 'string' } };
  for (let level = 1; level <= levels; level += 1)
    defs[`d${level}`] = { allOf: [{ $ref: `#/$defs/d${level - 1}` }, { $ref: `#/$defs/d${level - 1}` }] };
  return defs;
}

describe('patterns run in linear time', () => {
  it('refuses the 28-character input against ^(a+)+$ at once, nothing charged (V8 took 20 s and froze every request)', async () => {
    const user = await userWithNode('redos');
    const schema = { type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } } };
    const archive = await bundleWith('1.0.0', schema);
    expect((await upload(user.token, archive)).status).toBe(201);
    // 40 characters: minutes of backtracking in V8's RegExp, so a service that used it would not answer this test.
    for (const length of [28, 40]) {
      const refused = await execute(user, { name: `${'a'.repeat(length)}!` });
      expect(refused.status, refused.text).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'input_invalid',
        digest: sha256(archive),
        errors: [{ path: '/input/name', message: 'must match ^(a+)+$' }],
      });
    }
    expect((await execute(user, { name: 'a'.repeat(40) })).status).toBe(202);
    expect(await balance(user.token)).toBe(1000 - 4);
  });

  it('enforces each pattern of a schema as its own (not the first one compiled for all)', async () => {
    const user = await userWithNode('two-patterns');
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', pattern: '^a+$' }, b: { type: 'string', pattern: '^b+$' } },
      patternProperties: { '^x-': { type: 'integer' } },
    };
    expect((await upload(user.token, await bundleWith('1.0.0', schema))).status).toBe(201);
    const refused = await execute(user, { a: 'aa', b: 'aa', 'x-count': 'three' });
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.errors).toEqual([
      { path: '/input/b', message: 'must match ^b+$' },
      { path: '/input/x-count', message: 'must be integer' },
    ]);
    expect((await execute(user, { a: 'aa', b: 'bb', 'x-count': 3 })).status).toBe(202);
  });
});

describe('a schema the service cannot use is refused at upload, and nothing is stored', () => {
  const cases: Array<[string, unknown, string, RegExp]> = [
    [
      'a lookahead, which RE2 cannot run in linear time',
      { type: 'object', properties: { name: { type: 'string', pattern: '^(?=a)a+$' } } },
      'agent.json#/input_schema/properties/name/pattern',
      /RE2.*linear time/,
    ],
    [
      'a backreference',
      { type: 'object', patternProperties: { '^(a)\\1$': {} } },
      'agent.json#/input_schema/patternProperties/^(a)\\1$',
      /RE2/,
    ],
    [
      'a type JSON Schema does not have',
      { type: 'object', properties: { n: { type: 'int' } } },
      'agent.json#/input_schema/properties/n/type',
      /must be one of/,
    ],
    ['an asynchronous schema', { $async: true, type: 'object' }, 'agent.json#/input_schema/$async', /checked synchronously/],
    ['a schema that refers to itself without end', { $ref: '#' }, 'agent.json#/input_schema', /nests without end/],
    [
      'references that fan out beyond any deadline',
      { $defs: fanOut(40), $ref: '#/$defs/d40' },
      'agent.json#/input_schema',
      /cannot be checked in time/,
    ],
    [
      'a schema nested deeper than 32 levels',
      Array.from({ length: 40 }).reduce<object>((inner) => ({ not: inner }), {}),
      'agent.json#/input_schema',
      /deeper than 32/,
    ],
  ];

  it.each(cases)('%s', async (_what, schema, path, message) => {
    const token = await signIn(service.baseUrl, uniqueEmail('bad-schema'));
    const refused = await upload(token, await bundleWith('1.0.0', schema));
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body.code).toBe('bundle_invalid');
    expect(refused.body.errors).toEqual([{ path, message: expect.stringMatching(message) }]);
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/versions`, { token })).body.versions).toEqual([]);
  });
});

describe('checking an input is bounded in time', () => {
  it('refuses an input whose check runs past the deadline, then the version for a while without checking; nothing charged', async () => {
    const user = await userWithNode('slow-schema');
    // {} passes the upload's own try at once; only a value for `deep` walks the fan-out.
    const schema = { type: 'object', $defs: fanOut(40), properties: { deep: { $ref: '#/$defs/d40' } } };
    expect((await upload(user.token, await bundleWith('1.0.0', schema))).status).toBe(201);
    const slow = await execute(user, { deep: 'x' });
    expect(slow.status, slow.text).toBe(422);
    expect(slow.body).toMatchObject({
      code: 'input_invalid',
      errors: [{ path: '/input', message: expect.stringMatching(/cannot be checked within 100 ms/) }],
    });
    expect(slow.body.remedy).toMatch(/simpler input_schema/);
    const barred = await execute(user, {});
    expect(barred.status, barred.text).toBe(422);
    expect(barred.body.errors[0].message).toMatch(/refused for 10 more minute/);
    expect(await balance(user.token)).toBe(1000);
  });
});

describe('the run is charged against the version whose schema checked its input', () => {
  it('checks the first run after an upload against the upload, not the version the service went by before', async () => {
    const user = await userWithNode('after-upload');
    // A run of the built-in agent first: the service now knows this user has no upload current.
    expect((await execute(user, {})).status).toBe(202);
    const strict = await bundleWith('1.0.0', { type: 'object', required: ['name'], properties: { name: { type: 'string' } } });
    expect((await upload(user.token, strict)).status).toBe(201);
    const refused = await execute(user, {});
    expect(refused.status, refused.text).toBe(422);
    expect(refused.body).toMatchObject({
      code: 'input_invalid',
      digest: sha256(strict),
      errors: [{ path: '/input/name', message: 'is required' }],
    });
    const pinned = await execute(user, { name: 'Ada' });
    expect([pinned.status, pinned.body.bundle_digest]).toEqual([202, sha256(strict)]);
    // And back: the built-in agent again, once the upload is no longer current.
    expect((await httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'DELETE', token: user.token })).status).toBe(
      200,
    );
    const builtIn = await execute(user, {});
    expect([builtIn.status, builtIn.body.bundle_digest]).toEqual([202, undefined]);
  });

  it('never pins a run to a version whose schema refuses its input, however uploads and rollbacks race it', async () => {
    const user = await userWithNode('race');
    const strict = await bundleWith('1.0.0', { type: 'object', properties: { name: { type: 'string', maxLength: 3 } } });
    const loose = await bundleWith('2.0.0', { type: 'object', properties: { name: { type: 'string', maxLength: 100 } } });
    expect((await upload(user.token, strict)).status).toBe(201);
    expect((await upload(user.token, loose)).status).toBe(201);
    const makeCurrent = (digest: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/agents/${AGENT}/current`, { method: 'PUT', token: user.token, body: { digest } });
    const answers = [];
    for (let round = 0; round < 40; round += 1) {
      // Only the loose version takes this input; the current version flips while the run is checked and charged.
      const [answer] = await Promise.all([
        execute(user, { name: 'a long name' }),
        makeCurrent(round % 2 === 0 ? sha256(strict) : sha256(loose)),
      ]);
      answers.push(answer);
    }
    for (const answer of answers) {
      expect([202, 422, 503], answer.text).toContain(answer.status);
      if (answer.status === 202) expect(answer.body.bundle_digest).toBe(sha256(loose));
      else if (answer.status === 422) expect(answer.body).toMatchObject({ code: 'input_invalid', digest: sha256(strict) });
    }
    const accepted = answers.filter((answer) => answer.status === 202).length;
    expect(await balance(user.token)).toBe(1000 - 4 * accepted);
  });
});

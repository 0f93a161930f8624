// U+0000 anywhere a client writes (docs/api.md "Conventions"): in a path, a query, a JSON body's strings or keys, or
// a form, every route answers 400 invalid_request with a remedy, on both engines, and logs no error (PostgreSQL's
// text holds no NUL: it had answered 500 in 15 places). The routes are taken from the OpenAPI document, so a route
// added later is driven too. What an agent wrote, as its node ships it, is kept: a result's output with U+0000 as
// JSON escapes it, a log line's U+0000 as U+FFFD.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleCookie, finished, heldRun } from '../helpers/console.js';
import { fundWallet, signIn } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode, stopServingNodes, type EnrolledTestNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}
interface Schema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  minimum?: number;
  format?: string;
}
interface Operation {
  method: string;
  path: string;
  security: Array<Record<string, string[]>> | undefined;
  parameters: Array<{ name: string; in: 'path' | 'query' }>;
  body: Schema | undefined;
}

const lines: LogLine[] = [];
const logStream = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
    done();
  },
});
const service = useSvcApi(() => ({ logger: { level: 'info', stream: logStream } }));
afterAll(async () => {
  await stopServingNodes();
  logStream.destroy();
});

const errorLines = () =>
  lines.filter((line) => line.level >= 50).map((line) => `${line.msg}: ${JSON.stringify(line.err ?? line).slice(0, 300)}`);

/** Every operation of the router, as GET /openapi.json documents it. */
async function operations(): Promise<Operation[]> {
  type Documented = {
    security?: Operation['security'];
    parameters?: Operation['parameters'];
    requestBody?: { content: Record<string, { schema: Schema }> };
  };
  const document = (await httpRequest(`${service.baseUrl}/openapi.json`)).body as { paths: Record<string, Record<string, Documented>> };
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      security: operation.security,
      parameters: operation.parameters ?? [],
      body: operation.requestBody?.content['application/json']?.schema,
    })),
  );
}

/** A value of the schema's shape, each string `text`: what passes the shape of most bodies, free text wherever a string goes. */
function sampleOf(schema: Schema, text: string): unknown {
  const variant = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (variant !== undefined) return sampleOf(variant, text);
  if (schema.enum !== undefined) return schema.enum[0];
  const type = [schema.type ?? 'object'].flat().find((each) => each !== 'null');
  switch (type) {
    case 'string':
      return schema.format === 'uri' ? 'https://example.com/hook' : text;
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 0);
    case 'boolean':
      return false;
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sampleOf(schema.items ?? {}, text));
    default:
      return Object.fromEntries((schema.required ?? []).map((name) => [name, sampleOf(schema.properties?.[name] ?? {}, text)]));
  }
}

/** The JSON pointers of every string in `value`. */
function stringPaths(value: unknown, at = ''): string[] {
  if (typeof value === 'string') return [at];
  if (Array.isArray(value)) return value.flatMap((each, index) => stringPaths(each, `${at}/${index}`));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, each]) => stringPaths(each, `${at}/${key}`));
  return [];
}

/** `value` with the string at `pointer` given U+0000 at its end. */
function withNulAt(value: unknown, pointer: string): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  const keys = pointer.split('/').slice(1);
  let parent: Record<string, unknown> = copy;
  for (const key of keys.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
  parent[keys.at(-1)!] = `${String(parent[keys.at(-1)!])}\u0000`;
  return copy;
}

describe('U+0000 anywhere a client writes is refused with 400, on every route', () => {
  let email: string;
  let jwt: string;
  let node: EnrolledTestNode;
  let cookie: string;

  beforeAll(async () => {
    email = uniqueEmail('nul');
    jwt = await signIn(service.baseUrl, email);
    node = await enrollNode(service.baseUrl, email);
    cookie = await consoleCookie(service.walletUrl, jwt);
  });

  /** The console's pages, `/wallet` itself among them, answer a refusal with an HTML page rather than problem+json. */
  const isConsolePage = (operation: Operation) => operation.path === '/wallet' || operation.path.startsWith('/wallet/');

  /** The credential a caller of the operation sends: the node's where only a node may call, the JWT otherwise. */
  function headersFor(operation: Operation): Record<string, string> {
    if (isConsolePage(operation)) return { cookie, 'sec-fetch-site': 'same-origin', origin: 'null' };
    const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
    const headers: Record<string, string> = { 'idempotency-key': randomUUID() };
    if (schemes.includes('accessToken')) headers.authorization = `Bearer ${jwt}`;
    else if (schemes.includes('nodeCredential')) headers.authorization = `Bearer ${node.credential}`;
    return headers;
  }

  const pathOf = (operation: Operation, values: Record<string, string> = {}) =>
    operation.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => values[name] ?? 'x');

  async function send(operation: Operation, url: string, init: { rawBody?: string; contentType?: string } = {}): Promise<ApiResponse> {
    const headers = headersFor(operation);
    if (init.contentType !== undefined) headers['content-type'] = init.contentType;
    const body = init.rawBody === undefined ? {} : { rawBody: init.rawBody };
    return httpRequest(`${service.baseUrl}${url}`, { method: operation.method, headers, ...body });
  }

  /** The answer, unless it is the refusal this test wants: for the wallet pages an HTML page of status 400. */
  function wrongAnswer(operation: Operation, what: string, response: ApiResponse): string | undefined {
    const refused =
      response.status === 400 &&
      (isConsolePage(operation)
        ? /U\+0000/.test(response.text)
        : response.body?.code === 'invalid_request' && /U\+0000/.test(response.body?.remedy ?? ''));
    return refused ? undefined : `${operation.method} ${operation.path} (${what}): ${response.status} ${response.text.slice(0, 200)}`;
  }

  it('in a path parameter, a query, a JSON body string or key, a form field: 400 invalid_request, a remedy, no error logged', async () => {
    // Those that end the caller's session or its node's last: before the fix they did, and every answer after was 401.
    const endsSession = (operation: Operation) => /logout|\/nodes\/self(\/offline)?$/.test(operation.path);
    const all = (await operations()).sort((a, b) => Number(endsSession(a)) - Number(endsSession(b)));
    // The whole router: its own documentation, the API, the wallet pages and the sandbox provider.
    expect(all.length).toBeGreaterThan(80);
    const wrong: string[] = [];
    const check = (operation: Operation, what: string, response: ApiResponse) => {
      const problem = wrongAnswer(operation, what, response);
      if (problem !== undefined) wrong.push(problem);
    };

    for (const operation of all) {
      for (const parameter of operation.parameters.filter((each) => each.in === 'path')) {
        check(operation, `path ${parameter.name}`, await send(operation, pathOf(operation, { [parameter.name]: 'x%00' })));
      }
      const queried = operation.parameters.filter((each) => each.in === 'query').map((each) => each.name);
      for (const name of queried.length === 0 ? ['q'] : queried) {
        check(operation, `query ${name}`, await send(operation, `${pathOf(operation)}?${name}=x%00`));
      }

      if (operation.method === 'GET') continue;
      // Ids that pass what a route checks before it reads the body (an upload's agent and tier).
      const bodyPath = pathOf(operation, { agent_id: 'agent_ops_monitor_004' });
      if (isConsolePage(operation)) {
        const form = new URLSearchParams({ scope: 'all', period: 'day', cap: '5', name: 'A\u0000', description: 'a\u0000' });
        const formBody = { rawBody: form.toString(), contentType: 'application/x-www-form-urlencoded' };
        check(operation, 'form field', await send(operation, bodyPath, formBody));
        continue;
      }
      const sample = sampleOf(operation.body ?? { type: 'object', properties: {}, required: [] }, 'text');
      for (const pointer of stringPaths(sample)) {
        const body = { rawBody: JSON.stringify(withNulAt(sample, pointer)), contentType: 'application/json' };
        check(operation, `body ${pointer}`, await send(operation, bodyPath, body));
      }
      const keyed = { ...(typeof sample === 'object' && sample !== null && !Array.isArray(sample) ? sample : {}), 'a\u0000': 1 };
      check(operation, 'body key', await send(operation, bodyPath, { rawBody: JSON.stringify(keyed), contentType: 'application/json' }));
    }

    expect(wrong).toEqual([]);
    expect(errorLines()).toEqual([]);
  }, 120_000);

  it('names the field; a \\U escape is malformed JSON; an escaped backslash before u0000 is no NUL', async () => {
    const headers = { 'content-type': 'application/json' };
    const put = (rawBody: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/secrets/NUL_TEST`, { method: 'PUT', token: jwt, rawBody, headers });
    const capital = await put('{"value": "a\\U0000"}');
    // \U is no JSON escape: malformed, refused by the parser itself.
    expect(capital.status).toBe(400);
    const long = await put(JSON.stringify({ value: `${'x'.repeat(10_000)}\u0000` }));
    expect([long.status, long.body.code]).toEqual([400, 'invalid_request']);
    expect(long.body.errors).toEqual([{ path: '/value', message: 'must not contain U+0000 (NUL)' }]);
    const backslash = await put(JSON.stringify({ value: 'C:\\u0000' }));
    expect(backslash.status, backslash.text).toBe(200);
    expect(errorLines()).toEqual([]);
  });
});

describe('what an agent wrote, as its node ships it, is kept safely', () => {
  it("stores a result's output holding U+0000 as it came and answers it to the user; a log line's U+0000 becomes U+FFFD", async () => {
    const email = uniqueEmail('nul-agent');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const held = await heldRun(service.baseUrl, email, token);
    await held.log(['before\u0000after']);
    // Its lease is the node's: a NUL there is no agent's text, and is refused.
    const badLease = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/result`, {
      method: 'POST',
      token: held.node.credential,
      body: { lease_id: `${held.run.lease_id}\u0000`, status: 'succeeded', output: {} },
    });
    expect([badLease.status, badLease.body.code]).toEqual([400, 'invalid_request']);
    held.finish({ status: 'succeeded', output: { 'key\u0000': 'agent\u0000stdout', list: ['\u0000'] } });
    await finished(service.baseUrl, token, held.run.run_id);
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}`, { token });
    expect(run.body.status, run.text).toBe('succeeded');
    expect(run.body.output).toEqual({ 'key\u0000': 'agent\u0000stdout', list: ['\u0000'] });
    const logs = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/logs`, { token });
    expect(logs.body.entries.map((entry: { text: string }) => entry.text)).toContain('before\uFFFDafter');
    expect(errorLines()).toEqual([]);
  });
});

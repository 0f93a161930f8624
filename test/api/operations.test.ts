// What operators and their load balancers use on the API's port (docs/api.md "Operations"): GET /healthz, GET
// /readyz (503 when the database does not answer or its schema is not this program's), X-Request-Id on every
// answer and in every log line, and the OpenAPI document at /openapi.json covering every route.
import { readFileSync } from 'node:fs';
import { request as rawRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_SCHEMA_VERSION } from '../../src/api/store/shared-migrations.js';
import type { RunningService } from '../../src/api/server.js';
import { httpRequest } from '../helpers/http.js';
import { startSvcApi, useSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectNotReady(response: Awaited<ReturnType<typeof httpRequest>>, detail: RegExp): void {
  expect(response.status).toBe(503);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('retry-after')).toBe('5');
  expect(response.body).toMatchObject({ code: 'service_unavailable', detail: expect.stringMatching(detail) });
}

describe('health checks', () => {
  const service = useSvcApi();

  it('GET /healthz answers while the process is up; GET /readyz once the database answers with the current schema', async () => {
    expect(await httpRequest(`${service.baseUrl}/healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await httpRequest(`${service.baseUrl}/readyz`);
    expect(ready).toMatchObject({ status: 200, body: { status: 'ready', database: { schema_version: SERVICE_SCHEMA_VERSION } } });
    expect(ready.headers.get('cache-control')).toBe('no-store');
  });

  it('GET /readyz is 503 while the schema is not the one this program migrates to, and ready again after', async () => {
    const current = SERVICE_SCHEMA_VERSION;
    try {
      // What an instance of an older release sees once a newer one migrated the shared database, and the reverse.
      service.db.pragma(`user_version = ${current + 1}`);
      expectNotReady(
        await httpRequest(`${service.baseUrl}/readyz`),
        new RegExp(`schema is at version ${current + 1}, newer than this program's ${current}`),
      );
      service.db.pragma(`user_version = ${current - 1}`);
      expectNotReady(await httpRequest(`${service.baseUrl}/readyz`), /migrations pending/);
      // Liveness does not depend on the database: a restart would not fix it.
      expect((await httpRequest(`${service.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      service.db.pragma(`user_version = ${current}`);
    }
    expect((await httpRequest(`${service.baseUrl}/readyz`)).status).toBe(200);
  });
});

describe('GET /readyz with the database gone', () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startSvcApi({ metricsListen: { host: '127.0.0.1', port: 0 } });
  });
  afterAll(async () => {
    // Its last checkpoint fails on the connection the test closed; the HTTP side has stopped by then.
    await service.close().catch(() => undefined);
    removeTempDirs();
  });

  it('is 503 without internals, and the failure is counted as a database error', async () => {
    service.db!.close();
    const response = await httpRequest(`${service.baseUrl}/readyz`);
    expectNotReady(response, /^not ready: the database is not reachable$/);
    expect(response.text).not.toMatch(/connection|SQLITE|at \S+:\d+/);
    const metrics = await (await fetch(service.metricsUrl!)).text();
    expect(metrics).toMatch(/^svc_database_errors_total\{source="readiness"\} 1$/m);
    expect((await httpRequest(`${service.baseUrl}/healthz`)).status).toBe(200);
  });
});

describe('X-Request-Id', () => {
  const log: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') log.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const service = useSvcApi(() => ({ logger: { level: 'info', stream } }));

  it('returns the id a client sent, on answers and errors alike, and logs every line of the request with it', async () => {
    const cases = [
      { id: 'req-ok.1', path: '/v1/swarm/agents', status: 200 },
      { id: 'req_404:abc', path: '/v1/nowhere', status: 404 },
      { id: 'Root=1-5759e988/bd862e3f+fe1be1b6@x', path: '/v1/swarm/wallet', status: 401 },
      { id: 'req-400', path: '/v1/swarm/paygate/session', status: 400, body: { tier_id: 'nope', user_id: uniqueEmail() } },
    ];
    for (const { id, path, status, body } of cases) {
      const response = await httpRequest(`${service.baseUrl}${path}`, {
        headers: { 'x-request-id': id },
        ...(body === undefined ? {} : { body }),
      });
      expect(response.status).toBe(status);
      expect(response.headers.get('x-request-id')).toBe(id);
      const lines = log.filter((line) => line.request_id === id);
      expect(lines.map((line) => line.msg)).toContain('request');
    }
    // Every line a request wrote names it: no request line without its id.
    const requestLines = log.filter((line) => line.msg === 'request');
    expect(requestLines.length).toBeGreaterThanOrEqual(cases.length);
    expect(requestLines.every((line) => typeof line.request_id === 'string' && line.reqId === undefined)).toBe(true);
  });

  it('makes a fresh id when none is sent or the one sent is unsafe to log', async () => {
    const unsafe = ['', 'a'.repeat(129), 'two words', 'quote"d', 'comma,list', 'new\tline'];
    const seen = new Set<string>();
    for (const id of [undefined, ...unsafe]) {
      const response = await httpRequest(`${service.baseUrl}/healthz`, { headers: id === undefined ? {} : { 'x-request-id': id } });
      const answered = response.headers.get('x-request-id') ?? '';
      expect(answered).toMatch(UUID);
      seen.add(answered);
    }
    expect(seen.size).toBe(unsafe.length + 1);
    expect(log.some((line) => line.request_id === 'a'.repeat(129))).toBe(false);
  });

  it('is on the answers the router writes itself (a path that is not URL encoding)', async () => {
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const url = new URL(service.baseUrl);
      const request = rawRequest(
        { host: url.hostname, port: url.port, path: '/v1/docs/%E0%A4%A', headers: { 'x-request-id': 'raw-1' } },
        (response) => {
          response.resume();
          expect(response.statusCode).toBe(400);
          resolve(response.headers);
        },
      );
      request.on('error', reject);
      request.end();
    });
    expect(headers['x-request-id']).toBe('raw-1');
  });
});

describe('X-Request-Id on a refusal of the rate limit', () => {
  const service = useSvcApi({ rateLimitPerMinute: 1 });

  it('is on the 429 too', async () => {
    const verify = (id: string) =>
      httpRequest(`${service.baseUrl}/v1/auth/verify`, { body: { token: 'x' }, headers: { 'x-request-id': id } });
    await verify('first');
    const refused = await verify('second');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-request-id')).toBe('second');
  });
});

describe('GET /openapi.json', () => {
  const service = useSvcApi();

  /** Every route fastify's router holds, as [path, method], from its own listing (HEAD is GET's shadow). */
  function routesOfTheApp(): Array<[string, string]> {
    const routes: Array<[string, string]> = [];
    const stack: string[] = [];
    for (const line of service.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const match = /^([│├└─\s]*?)(?:[├└]── )(\S+)(?: \(([^)]+)\))?$/.exec(line);
      if (match === null) continue;
      const depth = match[1]!.length / 4;
      stack.length = depth;
      stack.push(match[2]!);
      for (const method of match[3]?.split(', ') ?? []) if (method !== 'HEAD') routes.push([stack.join(''), method]);
    }
    return routes;
  }

  it('is an OpenAPI 3 document in which every route of the service appears, with its parameters and schemas', async () => {
    const response = await httpRequest(`${service.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const document = JSON.parse(response.text) as { openapi: string; info: { title: string }; paths: Record<string, Record<string, any>> };
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info.title).toBe('svc-api');

    const routes = routesOfTheApp();
    expect(routes.length).toBeGreaterThan(25);
    const normalise = (path: string): string => path.replace(/:([A-Za-z_]+)/g, '{$1}').replace(/(.)\/$/, '$1');
    const documented = new Map(Object.entries(document.paths).map(([path, item]) => [normalise(path), item]));
    const missing = routes.filter(([path, method]) => documented.get(normalise(path))?.[method.toLowerCase()] === undefined);
    expect(missing).toEqual([]);

    // spec §4's endpoints and every one docs/api.md describes, ours included.
    const spec = [
      'POST /v1/swarm/paygate/session',
      'POST /v1/swarm/paygate/activate',
      'POST /v1/auth/issue-token',
      'POST /v1/auth/verify',
      'POST /v1/swarm/execute',
    ];
    const described =
      readFileSync(fileURLToPath(new URL('../../docs/api.md', import.meta.url)), 'utf8').match(
        /\b(?:GET|POST|PUT|DELETE) \/(?:v1|sandbox|healthz|readyz|openapi)[^\s`|,;)]*/g,
      ) ?? [];
    expect(described).toEqual(expect.arrayContaining(['GET /healthz', 'GET /readyz', 'GET /openapi.json']));
    const undocumented = [...new Set([...spec, ...described])].filter((endpoint) => {
      const [method, target] = endpoint.split(' ') as [string, string];
      // A query in the docs' example (`?platform=…`) is not part of the path.
      return document.paths[target.split('?')[0]!]?.[method.toLowerCase()] === undefined;
    });
    expect(undocumented).toEqual([]);

    // From the routes' own TypeBox schemas: execute's body, a path parameter, and the credential a route takes.
    const execute = document.paths['/v1/swarm/execute']!.post;
    expect(execute.requestBody.content['application/json'].schema.required).toEqual(expect.arrayContaining(['user_id', 'agent_id']));
    expect(execute.security).toEqual([{ accessToken: [] }, { nodeCredential: [] }]);
    const run = document.paths['/v1/swarm/runs/{run_id}']!.get;
    expect(run.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'path', name: 'run_id', required: true })]));
    expect(Object.keys(run.responses)).toContain('200');
    // Its errors: problem details with the stable codes, each status with its own.
    expect(run.responses['404'].content['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    expect(run.responses['404'].description).toContain('run_not_found');
    const problem = (document as unknown as { components: { schemas: Record<string, any> } }).components.schemas.Problem;
    expect(problem.properties.code.enum).toEqual(expect.arrayContaining(['run_not_found', 'unauthorized', 'service_unavailable']));
  });
});

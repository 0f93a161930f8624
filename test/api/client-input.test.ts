// No client input ends the process, and no connection idles for good (docs/api.md "Conventions"). One anonymous
// request, a Content-Length over its route's cap and no body, was answered 413 and had svc-api exit 1 thirty seconds
// later: the body's watch outlived the refused request, and its error had no listener. Here every route the service
// serves (the list it logs at start, from its router: a new route is sent all of this by itself) gets, on the real
// svc-api process, a Content-Length over every cap and silence, a body cut mid-way, a reset mid-body and a client
// gone mid-answer; the process must still serve once the last body timer has fired. A connection that sends
// nothing, or never finishes its headers, is closed, and so is one idle between requests; a held poll longer than
// both is answered.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleCookie } from '../helpers/console.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { rawConnection, requestHead, type RawConnection } from '../helpers/raw-http.js';
import { spawnSvcApi, type SpawnedSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';

/** Above every cap the service has: 64 KiB of JSON, a 6 MiB bundle, a 64 MiB artifact. */
const OVER_EVERY_CAP = 70 * 1024 * 1024;
/** Every type a route of the service parses: JSON, the wallet's forms, bundles and artifacts. */
const BODY_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'application/octet-stream'];
/** A body of 64 bytes of which 6 come. */
const CUT = { length: 64, sent: '{"a": ' };
const ARTIFACT_ROUTE = '/v1/swarm/runs/:run_id/artifacts/:name';
/** Every body but an artifact's is cut off after 1 s; an artifact's after 2 s, the longest timer of all. */
const TIMER_FLAGS = ['--body-idle-seconds', '1', '--body-min-rate', '0', '--artifact-idle-seconds', '2', '--rate-limit', '1000000'];

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** A request sent to one route: its method and path (params filled), and a credential that passes its checks. */
interface SentRequest {
  key: string;
  method: string;
  path: string;
  headers: Record<string, string>;
}

interface ServedRoute {
  method: string | string[];
  url: string;
  auth?: string;
}

/** Its log lines so far, parsed once each: the tests read them often, and a run writes thousands. */
const parsed = new WeakMap<SpawnedSvcApi, { read: number; lines: LogLine[] }>();
function logLines(service: SpawnedSvcApi): LogLine[] {
  const seen = parsed.get(service) ?? { read: 0, lines: [] };
  parsed.set(service, seen);
  const text = service.stderr();
  const end = text.lastIndexOf('\n') + 1;
  for (const line of text.slice(seen.read, end).split('\n')) {
    try {
      seen.lines.push(JSON.parse(line) as LogLine);
    } catch {
      // not a log line (an empty one, a warning of Node's)
    }
  }
  seen.read = Math.max(seen.read, end);
  return seen.lines;
}

/** Waits for `probe`, failing at once with the service's last words if it exits meanwhile. */
function whileAlive<T>(service: SpawnedSvcApi, probe: () => T | undefined, what: string): Promise<T> {
  return waitFor(
    async () => {
      const { exitCode } = service.process;
      if (exitCode !== null) throw new Error(`svc-api exited ${exitCode} waiting for ${what}: ${service.stderr().slice(-2000)}`);
      return probe();
    },
    what,
    20_000,
  );
}

/** Until `condition` holds (while the service lives). */
const until = (service: SpawnedSvcApi, condition: () => boolean, what: string): Promise<true> =>
  whileAlive(service, () => (condition() ? true : undefined), what);

/** The body of the last answer on `connection`. */
const lastBody = (connection: RawConnection): unknown => JSON.parse(connection.received().split('\r\n\r\n').at(-1)!);

const statusOf = (connection: RawConnection): number | undefined => {
  const match = /^HTTP\/1\.1 (\d{3}) /.exec(connection.received());
  return match === null ? undefined : Number(match[1]);
};

/** Closed, or answered and kept alive (which the test then names): nothing more will happen on it. */
const settled = (connection: RawConnection): boolean => {
  const head = connection.received().split('\r\n\r\n')[0]!;
  return connection.isClosed || (connection.received().includes('\r\n\r\n') && !/\r\nconnection: close$/im.test(head));
};

describe('every route, sent what no client input may turn into an exit', () => {
  let service: SpawnedSvcApi;
  let credentials: { email: string; user: string; node: string; console: Record<string, string> };
  let requests: SentRequest[];

  beforeAll(async () => {
    service = await spawnSvcApi({ args: TIMER_FLAGS, env: { SVC_LOG_LEVEL: 'debug' } });
    const email = uniqueEmail('client-input');
    const user = await signIn(service.baseUrl, email);
    // The console's forms read their body only for a session posting from the console itself.
    const consoleHeaders = {
      cookie: await consoleCookie(`${service.baseUrl}/wallet`, user),
      'sec-fetch-site': 'same-origin',
      origin: 'null',
    };
    credentials = { email, user, node: (await enrollNode(service.baseUrl, email)).credential, console: consoleHeaders };
    const served = await whileAlive(service, () => logLines(service).find((line) => line.msg === 'routes served'), 'the routes line');
    const routes = [...(served.routes as ServedRoute[]), { method: ['GET', 'POST'], url: '/no/such/route' }];
    requests = routes.flatMap((route) =>
      [route.method].flat().map((method) => {
        // Past every check before the body (a route of its own checks, the release downloads, takes a node's too).
        const token = route.auth === undefined || route.auth === 'node' ? credentials.node : credentials.user;
        const path = route.url.replace(/:[^/]+|\*/g, 'x');
        const headers = route.url.startsWith('/wallet') ? consoleHeaders : { authorization: `Bearer ${token}` };
        return { key: `${method} ${route.url}`, method, path, headers };
      }),
    );
  });
  afterAll(async () => {
    await service?.stop();
    removeTempDirs();
  });

  /** Opens one connection per request and body type, and writes on each what `write` gives; `phase` names its ids. */
  async function sendEach(phase: string, types: readonly string[], write: (request: SentRequest, type: string, id: string) => string) {
    return Promise.all(
      requests.flatMap((request, index) =>
        types.map(async (type) => {
          const id = `${phase}-${index}-${type.split('/')[1]}`;
          const connection = await rawConnection(service.baseUrl);
          connection.socket.write(write(request, type, id));
          return { key: `${request.key} (${type})`, id, connection };
        }),
      ),
    );
  }
  const head = (request: SentRequest, type: string, length: number, id: string) =>
    requestHead(request.method, request.path, { ...request.headers, 'content-type': type, 'content-length': length, 'x-request-id': id });
  /** The ids of the requests whose body was cut off so far. */
  const cutOff = (): Set<unknown> =>
    new Set(logLines(service).flatMap((line) => (/^request body cut off/.test(line.msg) ? [line.request_id] : [])));

  it('still serves once the last body timer has fired', async () => {
    expect(requests.length).toBeGreaterThan(80);
    const keys = requests.map((request) => request.key);
    expect(keys).toEqual(
      expect.arrayContaining([`PUT ${ARTIFACT_ROUTE}`, 'POST /v1/auth/email-code', 'POST /wallet/secrets', 'GET /healthz']),
    );

    // A Content-Length over every cap, and nothing more: answered at once (413, or the route's own refusal) and the
    // connection closed, since the body that never came can no longer be read.
    const overCap = await sendEach('over', BODY_TYPES, (request, type, id) => head(request, type, OVER_EVERY_CAP, id));
    await until(service, () => overCap.every(({ connection }) => settled(connection)), 'every over-cap answer');
    expect(overCap.filter(({ connection }) => !connection.isClosed).map(({ key }) => key)).toEqual([]);
    expect(overCap.filter(({ connection }) => !(statusOf(connection)! < 500)).map(({ key }) => key)).toEqual([]);
    const emailCode = overCap.find(({ key }) => key === 'POST /v1/auth/email-code (application/json)')!;
    expect(statusOf(emailCode.connection)).toBe(413);

    // A body cut mid-way: a route reading it cuts it off (408, or its own refusal once the rest is known never to
    // come), one that answers without it answers; both close.
    const cut = await sendEach('cut', BODY_TYPES, (request, type, id) => head(request, type, CUT.length, id) + CUT.sent);
    await until(service, () => cut.every(({ connection }) => settled(connection)), 'every cut body answered');
    expect(cut.filter(({ connection }) => !connection.isClosed).map(({ key }) => key)).toEqual([]);
    expect(cut.filter(({ connection }) => !(statusOf(connection)! < 500)).map(({ key }) => key)).toEqual([]);
    const wasCut = cutOff();
    const readers = new Set(cut.filter(({ id }) => wasCut.has(id)).map(({ key }) => key));
    expect(readers).toContain(`PUT ${ARTIFACT_ROUTE} (application/octet-stream)`);
    expect(readers).toContain('POST /wallet/secrets (application/x-www-form-urlencoded)');

    // A chunked body that stops being HTTP after its first chunk (the next size line is not a number): Node ends the
    // request as a client gone, the parser answers 400, and a route reading the body is told it was aborted.
    const broken = await sendEach('chunked', BODY_TYPES, (request, type, id) => {
      const { 'content-length': _length, ...chunked } = {
        ...request.headers,
        'content-type': type,
        'x-request-id': id,
        'content-length': 0,
      };
      return `${requestHead(request.method, request.path, { ...chunked, 'transfer-encoding': 'chunked' })}3\r\na=1\r\nnot a size\r\n`;
    });
    await until(service, () => broken.every(({ connection }) => settled(connection)), 'every broken chunked body answered');
    expect(broken.filter(({ connection }) => !(statusOf(connection)! < 500)).map(({ key }) => key)).toEqual([]);

    // A reset mid-body, once the ones answering without their body have answered (by then each was taken in).
    const reset = await sendEach('reset', ['application/json', 'application/octet-stream'], (request, type, id) => {
      return head(request, type, CUT.length, id) + CUT.sent;
    });
    const early = reset.filter(({ key }) => !readers.has(key));
    await until(service, () => early.every(({ connection }) => connection.received() !== '' || connection.isClosed), 'the early answers');
    for (const { connection } of reset) connection.socket.resetAndDestroy();

    // A client gone mid-answer: the whole request, then away (a body that does not parse: nothing but a GET acts).
    await Promise.all(
      requests.map(async (request) => {
        const connection = await rawConnection(service.baseUrl);
        const whole = `${head(request, 'application/json', 1, randomUUID())}{`;
        await new Promise<void>((written) => connection.socket.write(whole, () => written()));
        connection.socket.destroy();
      }),
    );

    // A request that acts, sent whole and then reset: the route runs with its client gone (and the client's address
    // no longer on the socket), and must still record who asked.
    const signIns = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const connection = await rawConnection(service.baseUrl);
        const body = JSON.stringify({ email: uniqueEmail('gone') });
        const whole =
          requestHead('POST', '/v1/auth/email-code', { 'content-type': 'application/json', 'content-length': body.length }) + body;
        await new Promise<void>((written) => connection.socket.write(whole, () => written()));
        connection.socket.resetAndDestroy();
        return connection;
      }),
    );
    await until(service, () => signIns.every((connection) => connection.isClosed), 'the reset sign-ins');

    // The longest timer, once every request above was sent: an artifact's body cut mid-way, 2 s (every other body's
    // is 1 s). Once it fired, every timer the requests above armed has fired or was cleared.
    const sentinel = `sentinel-${randomUUID()}`;
    const last = await rawConnection(service.baseUrl);
    last.socket.write(
      requestHead('PUT', '/v1/swarm/runs/x/artifacts/x?lease_id=x', {
        authorization: `Bearer ${credentials.node}`,
        'content-type': 'application/octet-stream',
        'content-length': CUT.length,
        'x-request-id': sentinel,
      }) + CUT.sent,
    );
    await until(service, () => cutOff().has(sentinel), 'the last timer');
    await last.closed;

    expect(service.process.exitCode).toBeNull();
    expect((await httpRequest(`${service.baseUrl}/healthz`)).status).toBe(200);
    const code = await httpRequest(`${service.baseUrl}/v1/auth/email-code`, { body: { email: uniqueEmail('after') } });
    expect(code.status, code.text).toBe(202);
    // A client's input is never the service's failure: no error line.
    expect(logLines(service).filter((line) => line.level >= 50)).toEqual([]);
  });

  it('answers a request held past its body idle time, its declared body never come', async () => {
    // A run the node holds and never finishes (the node's own, leased to it at once): a wait on it is held.
    await fundWallet(service.baseUrl, credentials.email, 100);
    const agent = `${service.baseUrl}/v1/swarm/nodes/self/agents/agent_ops_monitor_004`;
    expect((await httpRequest(agent, { method: 'PUT', token: credentials.node })).status).toBeLessThan(300);
    const execute = { user_id: credentials.email, agent_id: 'agent_ops_monitor_004' };
    const once = { 'idempotency-key': randomUUID() };
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, { body: execute, headers: once, token: credentials.node });
    expect(run.status, run.text).toBe(202);
    const id = `held-${randomUUID()}`;
    const held = await rawConnection(service.baseUrl);
    const headers = { authorization: `Bearer ${credentials.user}`, 'content-type': 'application/json', 'content-length': CUT.length };
    held.socket.write(requestHead('GET', `/v1/swarm/runs/${run.body.run_id}?wait=3`, { ...headers, 'x-request-id': id }));
    // The body's timer fires while the answer is still held; the answer then comes when the wait is over.
    await until(service, () => cutOff().has(id), 'the body cut off');
    expect(held.received()).toBe('');
    await until(service, () => held.isClosed, 'the held answer');
    expect(statusOf(held)).toBe(200);
    expect(held.received()).toMatch(/\r\nconnection: close\r\n/i);
    expect(lastBody(held)).toMatchObject({ run_id: run.body.run_id, status: 'running' });
    expect(service.process.exitCode).toBeNull();
    expect((await httpRequest(`${service.baseUrl}/healthz`)).status).toBe(200);

    // The console follows the same run's log; the connection then carries a request whose headers are over the cap,
    // which Node answers 431 and closes under the stream: a client gone, not a failure (bench:fuzz case 8820).
    // A second follow is pipelined behind the first, its answer queued while the first streams.
    const follow = await rawConnection(service.baseUrl);
    const logEvents = requestHead('GET', `/wallet/runs/${run.body.run_id}/log-events`, credentials.console);
    follow.socket.write(logEvents + logEvents + requestHead('GET', '/healthz', { 'x-filler': 'a'.repeat(70 * 1024) }));
    await until(service, () => follow.isClosed, 'the stream closed');
    expect((await httpRequest(`${service.baseUrl}/healthz`)).status).toBe(200);
    expect(logLines(service).filter((line) => line.level >= 50)).toEqual([]);
  });
});

describe('a connection without a request being answered', () => {
  let service: SpawnedSvcApi;
  beforeAll(async () => {
    service = await spawnSvcApi({ args: ['--headers-timeout-seconds', '1', '--keep-alive-seconds', '1'] });
  });
  afterAll(async () => {
    await service?.stop();
    removeTempDirs();
  });

  it('is closed with 408 when it sends nothing, or never finishes its headers', async () => {
    const silent = await rawConnection(service.baseUrl);
    const unfinished = await rawConnection(service.baseUrl);
    unfinished.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n');
    await until(service, () => silent.isClosed && unfinished.isClosed, 'both closed');
    for (const connection of [silent, unfinished]) {
      expect(connection.received()).toMatch(/^HTTP\/1\.1 408 [^]*\r\nContent-Type: application\/problem\+json[^]*"code":"invalid_request"/);
    }
  });

  it('is closed once idle between two requests for the keep-alive time', async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n\r\n');
    await until(service, () => connection.isClosed, 'the idle connection closed');
    expect(connection.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(connection.received()).not.toMatch(/connection: close/i);
  });

  it('answers a poll held longer than both, on a connection kept alive from an earlier request', async () => {
    const node = await enrollNode(service.baseUrl, uniqueEmail('held-poll'));
    const connection = await rawConnection(service.baseUrl);
    connection.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n\r\n');
    await until(service, () => statusOf(connection) === 200, 'the first answer');
    const body = JSON.stringify({ hostname: 'h', version: 'v', capacity: 1, running: [], wait_seconds: 3 });
    const heldFrom = Date.now();
    const headers = { authorization: `Bearer ${node.credential}`, 'content-type': 'application/json', 'content-length': body.length };
    connection.socket.write(requestHead('POST', '/v1/swarm/nodes/poll', headers) + body);
    await until(service, () => /"lease_seconds"/.test(connection.received()) || connection.isClosed, 'the poll answered');
    // Held past the headers timeout (checked every second) and the keep-alive time: both 1 s.
    expect(Date.now() - heldFrom).toBeGreaterThanOrEqual(2_000);
    expect(
      connection
        .received()
        .split('HTTP/1.1 ')
        .slice(1)
        .map((answer) => answer.slice(0, 3)),
    ).toEqual(['200', '200']);
    expect(lastBody(connection)).toMatchObject({ runs: [], lost: [] });
    connection.socket.destroy();
  });
});

// Bad HTTP input (docs/api.md "Conventions"): JSON nested deeper than 64 levels is a 400 on every JSON body (an
// execute's input nested 5,000 deep and a node's result 200,000 deep answered 500); a body that stops arriving is
// cut off with 408 by an idle time and a minimum rate, per route; one client address holds a bounded number of
// connections; a client that goes away mid-request is logged at info, never error. Real svc-api over HTTP and raw
// sockets.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { rawConnection } from '../helpers/raw-http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const postHead = (path: string, length: number, token?: string) =>
  `POST ${path} HTTP/1.1\r\nHost: svc\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`;

const nested = (depth: number, leaf = '1'): string => '['.repeat(depth) + leaf + ']'.repeat(depth);

describe('JSON deeper than 64 levels', () => {
  const service = useSvcApi();

  it("is a 400 for an execute's input nested 5,000 deep (it answered 500: a stack overflow)", async () => {
    const email = uniqueEmail('deep');
    const token = await signIn(service.baseUrl, email);
    const body = `{"user_id": ${JSON.stringify(email)}, "agent_id": "agent_ops_monitor_004", "input": {"x": ${nested(5000)}}}`;
    const answer = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      rawBody: body,
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      token,
    });
    expect(answer.status, answer.text).toBe(400);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(answer.body).toMatchObject({ code: 'invalid_request', detail: 'the request body nests deeper than 64 levels' });
  });

  it("is a 400 for a node's result nested 200,000 deep (it answered 500), and the run takes a sound result after", async () => {
    const email = uniqueEmail('deep-result');
    await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const node = await enrollNode(service.baseUrl, email);
    await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/agent_ops_monitor_004`, { method: 'PUT', token: node.credential });
    // The node's own run: leased to it at once, so its result is what reaches the store.
    const run = await httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
      body: { user_id: email, agent_id: 'agent_ops_monitor_004' },
      headers: { 'idempotency-key': randomUUID() },
      token: node.credential,
    });
    expect(run.status, run.text).toBe(202);
    const result = (output: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.body.run_id}/result`, {
        rawBody: `{"lease_id": ${JSON.stringify(run.body.lease.lease_id)}, "status": "succeeded", "output": ${output}}`,
        headers: { 'content-type': 'application/json' },
        token: node.credential,
      });
    const deep = await result(`{"x": ${nested(200_000)}}`);
    expect(deep.status, deep.text).toBe(400);
    expect(deep.body.detail).toBe('the request body nests deeper than 64 levels');
    const sound = await result('{"ok": true}');
    expect(sound.status, sound.text).toBe(200);
    expect(sound.body).toMatchObject({ status: 'succeeded', output: { ok: true } });
  });

  it('counts brackets inside strings for nothing, and takes an input 63 levels deep (the body is level 1)', async () => {
    const email = uniqueEmail('deep-ok');
    const token = await signIn(service.baseUrl, email);
    await fundWallet(service.baseUrl, email, 100);
    const execute = (input: string) =>
      httpRequest(`${service.baseUrl}/v1/swarm/execute`, {
        rawBody: `{"user_id": ${JSON.stringify(email)}, "agent_id": "agent_ops_monitor_004", "input": ${input}}`,
        headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        token,
      });
    // Past the parser: refused for having no node, which is checked after the body.
    // The body's object, the input's object, then 62 arrays: 64 levels, taken; one more, refused.
    expect((await execute(`{"x": ${nested(62)}}`)).body.code).toBe('no_node_available');
    expect((await execute(`{"x": ${JSON.stringify('['.repeat(1000))}}`)).body.code).toBe('no_node_available');
    expect((await execute(`{"x": ${nested(63)}}`)).body.code).toBe('invalid_request');
    // Every JSON body, not only execute's.
    const session = await httpRequest(`${service.baseUrl}/v1/swarm/paygate/session`, {
      rawBody: `{"tier_id": "svc_starter_agents", "user_id": ${nested(100, '"a@b.c"')}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect([session.status, session.body.detail]).toEqual([400, 'the request body nests deeper than 64 levels']);
  });
});

describe('a body that stops arriving', () => {
  const service = useSvcApi({ bodyTimeout: { idleMs: 300, minBytesPerSecond: 2000 } });

  it('is cut off with 408 problem+json and the connection closed, when it stalls after one byte', async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.socket.write(`${postHead('/v1/swarm/paygate/session', 100)}{`);
    await connection.closed;
    const text = connection.received();
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/\r\ncontent-type: application\/problem\+json/i);
    expect(text).toMatch(/\r\nconnection: close/i);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({
      status: 408,
      code: 'invalid_request',
      detail: expect.stringMatching(/stopped arriving/),
    });
  });

  it('is cut off when it trickles below the minimum rate, each pause shorter than the idle time', async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.socket.write(postHead('/v1/swarm/paygate/session', 10_000));
    // A byte every 100 ms: never idle for 300 ms, but 10 bytes a second against 2,000.
    const trickle = setInterval(() => connection.socket.writable && connection.socket.write(' '), 100);
    await connection.closed;
    clearInterval(trickle);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('is never cut while it keeps coming, however long it takes in all', async () => {
    const body = JSON.stringify({ tier_id: 'svc_starter_agents', user_id: uniqueEmail('slow-body'), padding: 'x'.repeat(4000) });
    const connection = await rawConnection(service.baseUrl);
    connection.socket.write(postHead('/v1/swarm/paygate/session', Buffer.byteLength(body)));
    // 4 KiB in 200-byte pieces every 50 ms: about a second in all, never idle, 4,000 bytes a second.
    for (let offset = 0; offset < body.length; offset += 200) {
      connection.socket.write(body.slice(offset, offset + 200));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await waitFor(async () => (connection.received().includes('\r\n\r\n') ? true : undefined), 'the answer');
    connection.socket.destroy();
    expect(connection.received()).toMatch(/^HTTP\/1\.1 400 /); // the body's own fault (padding is no field), not a 408
  });

  it('follows its route: a route may take a body with long pauses (a stream of logs), or set its own idle time', async () => {
    // A second app on the same service context, with the routes a streaming endpoint would declare.
    const app = await buildApp(service.ctx, { bodyTimeout: { idleMs: 300, minBytesPerSecond: 2000 } });
    app.post('/test/unbounded', { config: { bodyTimeout: false } }, async (request) => ({ got: request.body }));
    app.post('/test/patient', { config: { bodyTimeout: { idleMs: 60_000, minBytesPerSecond: 0 } } }, async (request) => ({
      got: request.body,
    }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
      for (const path of ['/test/unbounded', '/test/patient']) {
        const connection = await rawConnection(base);
        connection.socket.write(`${postHead(path, 8)}{"a":`);
        // Paused three times the service's idle time, then finished: answered, not cut.
        await new Promise((resolve) => setTimeout(resolve, 900));
        connection.socket.write('1} ');
        await waitFor(async () => (connection.received().includes('{"got"') ? true : undefined), `the answer of ${path}`);
        connection.socket.destroy();
        expect(connection.received()).toMatch(/^HTTP\/1\.1 200 /);
      }
    } finally {
      await app.close();
    }
  });
});

describe('connections per client address', () => {
  const service = useSvcApi({ maxConnectionsPerAddress: 3 });

  it('closes a connection over the cap at once, keeps the others serving, and takes one again once one closes', async () => {
    const held = await Promise.all([1, 2, 3].map(() => rawConnection(service.baseUrl)));
    // The service counts a connection once it accepted it: a request answered on each proves all three counted.
    for (const connection of held) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n\r\n');
    await waitFor(async () => (held.every((connection) => connection.received().includes('"ok"')) ? true : undefined), 'three answers');
    const over = await rawConnection(service.baseUrl);
    over.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n\r\n');
    await over.closed;
    expect(over.received()).toBe('');
    held[0]!.socket.destroy();
    await waitFor(
      async () => ((await fetch(`${service.baseUrl}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined),
      'a connection taken again',
    );
    for (const connection of held) connection.socket.destroy();
  });
});

describe('connections of a trusted proxy', () => {
  const service = useSvcApi({ maxConnectionsPerAddress: 1, trustProxy: ['127.0.0.1'] });

  it('are not capped: behind a proxy every client arrives from it', async () => {
    const held = await Promise.all([1, 2, 3].map(() => rawConnection(service.baseUrl)));
    for (const connection of held) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: svc\r\n\r\n');
    await waitFor(async () => (held.every((connection) => connection.received().includes('"ok"')) ? true : undefined), 'three answers');
    for (const connection of held) connection.socket.destroy();
  });
});

describe('a client that goes away mid-request', () => {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const service = useSvcApi(() => ({ logger: { level: 'info', stream } }));
  afterAll(() => stream.destroy());

  it('is logged at info, never as an error: mid-body, and while its long poll is held', async () => {
    const midBody = await rawConnection(service.baseUrl);
    midBody.socket.write(`${postHead('/v1/swarm/paygate/session', 100)}{"tier_id": "svc_`);
    await waitFor(async () => (midBody.received() === '' && lines.length > 0 ? true : undefined), 'the service to take the request');
    midBody.socket.destroy();
    await waitFor(
      async () => lines.find((line) => /closed the connection before its request was answered/.test(line.msg)),
      'the info line',
    );

    const node = await enrollNode(service.baseUrl, uniqueEmail('gone'));
    const body = JSON.stringify({ hostname: 'h', version: 'v', capacity: 1, running: [], wait_seconds: 10 });
    const poll = await rawConnection(service.baseUrl);
    poll.socket.write(`${postHead('/v1/swarm/nodes/poll', body.length, node.credential)}${body}`);
    // The poll writes the node's last_seen_at when it starts holding.
    await waitFor(
      async () =>
        (service.db.prepare('SELECT last_seen_at FROM nodes WHERE node_id = ?').get(node.node_id) as { last_seen_at: number | null })
          .last_seen_at ?? undefined,
      'the poll to be held',
    );
    poll.socket.destroy();
    // Requests after it are answered and logged in order: once this one is, the service has dealt with the abort.
    expect((await fetch(`${service.baseUrl}/healthz`)).status).toBe(200);
    await waitFor(
      async () => lines.find((line) => line.msg === 'request' && (line as { route?: string }).route === '/healthz'),
      'the next request logged',
    );
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  });
});

// Signed webhooks of run events (docs/api.md "Webhooks"): each state change of a run is written to the outbox in its
// own transaction and delivered by a worker to the user's HTTPS endpoints, signed Svc-Signature: t=…,v1=…; a failed
// attempt is recorded with its answer and tried again after the backoff; a delivery can be re-sent; the signing
// secret rotates with an overlap; private, loopback and link-local addresses are refused before a connection is made,
// unless the operator allows them, and every missing connection reads alike; re-sends are limited per endpoint. The
// receiver is a real HTTPS server with a certificate openssl made, or a bare port counting what reaches it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/api/payments/webhook-signature.js';
import { httpRequest } from '../helpers/http.js';
import { MovableClock } from '../helpers/clock.js';
import { WEBHOOK_NO_CONNECTION_ERROR, WEBHOOK_RESENDS_PER_MINUTE } from '../../src/contract/webhooks.js';
import { consoleCookie, consolePost } from '../helpers/console.js';
import { closedPort, startByteCounter, startHttpsReceiver } from '../helpers/https-receiver.js';
import type { ByteCounter, HttpsReceiver, Received } from '../helpers/https-receiver.js';
import { startSvcApi, useSvcApi, type TestService } from '../helpers/svc-api.js';
import { waitFor } from '../helpers/wait.js';
import { execute, paidUser, paidUserWithNode, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';

const AGENT = 'agent_ops_monitor_004';

describe('webhooks of run events', () => {
  const clock = new MovableClock();
  let receiver: HttpsReceiver;
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
  });
  const service = useSvcApi(() => ({ clock, runTiming: TEST_RUN_TIMING, webhookAllowPrivate: true, webhookCa: receiver.certPem }));
  afterAll(async () => {
    await stopNodes();
    await receiver.close();
  });
  const call = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const addEndpoint = async (token: string, body: Record<string, unknown> = {}) => {
    const added = await call('/v1/swarm/webhooks', token, {
      method: 'POST',
      body: { url: `${receiver.url}/hooks/${Math.random().toString(36).slice(2)}`, ...body },
    });
    expect(added.status, added.text).toBe(201);
    return added.body as { endpoint_id: string; url: string; signing_secret: string; events: string[] };
  };
  // Each endpoint has a path of its own, whichever name or address reaches the receiver.
  const to = (endpoint: { url: string }): Received[] =>
    receiver.received.filter((request) => new URL(endpoint.url).pathname === request.path);
  const waitForTo = (endpoint: { url: string }, count: number) =>
    waitFor(async () => (to(endpoint).length >= count ? to(endpoint) : undefined), `${count} deliveries to ${endpoint.url}`, 20_000);
  const eventsOf = (requests: Received[]) =>
    requests.map((request) => JSON.parse(request.body) as { id: string; type: string; data: { run: Record<string, unknown> } });
  const verify = (request: Received, secret: string) =>
    verifyWebhookSignature(secret, request.headers['svc-signature'], Buffer.from(request.body), clock.now());

  it('sends queued, started and succeeded of a run, each signed with the endpoint secret, in order; failed with its reason', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const endpoint = await addEndpoint(user.token);
    expect(endpoint.signing_secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(endpoint.events).toEqual([
      'queued',
      'started',
      'succeeded',
      'failed',
      'cancelled',
      'schedule.paused',
      'schedule.resumed',
      'schedule.skipping',
    ]);
    const run = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    expect(run.body.status).toBe('succeeded');
    const requests = await waitForTo(endpoint, 3);
    for (const request of requests) {
      expect(() => verify(request, endpoint.signing_secret)).not.toThrow();
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['svc-event-id']).toBe(JSON.parse(request.body).id);
    }
    const events = eventsOf(requests).sort((a, b) => a.id.localeCompare(b.id));
    expect(events.map((event) => event.type)).toEqual(['run.queued', 'run.started', 'run.succeeded']);
    expect(events[2]!.data.run).toMatchObject({
      run_id: run.body.run_id,
      agent_id: AGENT,
      status: 'succeeded',
      charged_cents: 4,
      node_id: user.node.node_id,
      error: null,
    });
    // The run's output is not in the event: GET /v1/swarm/runs/{id} has it.
    expect(events[2]!.data.run).not.toHaveProperty('output');
    // Another key signs nothing here.
    expect(() => verify(requests[0]!, 'whsec_not_this_one')).toThrow();
  });

  it('sends only the events an endpoint takes; a failed run is sent failed with its reason', async () => {
    const user = await paidUserWithNode(service, 100, {
      agents: [AGENT],
      answer: () => ({ status: 'failed', output: { error: 'exit', message: 'exit 7' } }),
    });
    // By a name: the connection goes to the address it resolved to, and the name stays the TLS server name and the Host.
    const endpoint = await addEndpoint(user.token, { events: ['failed'], url: `https://localhost:${receiver.port}/hooks/by-name` });
    const run = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    expect(run.body.status).toBe('failed');
    const [request] = await waitForTo(endpoint, 1);
    expect(request!.servername).toBe('localhost');
    expect(request!.headers.host).toBe(`localhost:${receiver.port}`);
    expect(eventsOf([request!])[0]).toMatchObject({
      type: 'run.failed',
      data: { run: { run_id: run.body.run_id, status: 'failed', charged_cents: 0, error: { code: 'exit', message: 'exit 7' } } },
    });
    const deliveries = await waitFor(async () => {
      const page = (await call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/deliveries`, user.token)).body;
      return page.deliveries.length === 1 && page.deliveries[0].status === 'delivered' ? page : undefined;
    }, 'the delivery recorded');
    expect(deliveries.deliveries[0]).toMatchObject({ event_type: 'failed', run_id: run.body.run_id, attempts: 1, last_status_code: 200 });
  });

  it('records a failed attempt with its answer, tries again after the backoff, and can re-send a delivery', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const endpoint = await addEndpoint(user.token, { events: ['succeeded'] });
    receiver.answerWith({ status: 500, body: 'receiver down' });
    const run = await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    const [first] = await waitForTo(endpoint, 1);
    const eventId = JSON.parse(first!.body).id as string;
    const detail = () => call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/deliveries/${eventId}`, user.token);
    const pending = await waitFor(
      async () =>
        (await detail()).body.attempts === 1 && (await detail()).body.last_status_code === 500 ? (await detail()).body : undefined,
      'the failed attempt recorded',
    );
    expect(pending).toMatchObject({ status: 'pending', last_error: 'answered HTTP 500', run_id: run.body.run_id });
    expect(Date.parse(pending.next_attempt_at) - Date.parse(pending.last_attempt_at)).toBeGreaterThanOrEqual(10_000);
    // Nothing more before the backoff is over; the service's clock moved past it, the second attempt goes.
    clock.advance(11_000);
    const [, second] = await waitForTo(endpoint, 2);
    expect(second!.headers['svc-delivery-attempt']).toBe('2');
    expect(JSON.parse(second!.body).id).toBe(eventId);
    const delivered = await waitFor(
      async () => ((await detail()).body.status === 'delivered' ? (await detail()).body : undefined),
      'delivered',
    );
    expect(delivered.attempt_log).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 500, error: 'answered HTTP 500', response_excerpt: 'receiver down' }),
      expect.objectContaining({ attempt: 2, status_code: 200, error: null, response_excerpt: 'ok' }),
    ]);
    expect(delivered.payload).toMatchObject({ id: eventId, type: 'run.succeeded' });
    // A re-send: the same event again, at once, a third attempt.
    const resent = await call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/deliveries/${eventId}/resend`, user.token, { method: 'POST' });
    expect(resent.status, resent.text).toBe(202);
    const [, , third] = await waitForTo(endpoint, 3);
    expect(JSON.parse(third!.body).id).toBe(eventId);
    expect(() => verify(third!, endpoint.signing_secret)).not.toThrow();
    await waitFor(
      async () => ((await detail()).body.attempt_log.length === 3 && (await detail()).body.status === 'delivered' ? true : undefined),
      'the re-send recorded',
    );
  });

  it('rotates the signing secret: the old one signs beside the new for the overlap asked, then only the new', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const endpoint = await addEndpoint(user.token, { events: ['succeeded'] });
    const rotated = await call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/rotate-secret`, user.token, {
      method: 'POST',
      body: { previous_secret_seconds: 3600 },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.signing_secret).not.toBe(endpoint.signing_secret);
    const overlapMs = Date.parse(rotated.body.previous_secret_expires_at) - clock.now();
    expect(overlapMs).toBeGreaterThan(3_590_000);
    expect(overlapMs).toBeLessThanOrEqual(3_600_000);
    await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    const [overlap] = await waitForTo(endpoint, 1);
    expect(String(overlap!.headers['svc-signature']).match(/v1=/g)).toHaveLength(2);
    expect(() => verify(overlap!, endpoint.signing_secret)).not.toThrow();
    expect(() => verify(overlap!, rotated.body.signing_secret)).not.toThrow();
    // Rotated again with no overlap: only the newest signs.
    const again = await call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/rotate-secret`, user.token, {
      method: 'POST',
      body: { previous_secret_seconds: 0 },
    });
    expect(again.body.previous_secret_expires_at).toBeNull();
    await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    const [, after] = await waitForTo(endpoint, 2);
    expect(String(after!.headers['svc-signature']).match(/v1=/g)).toHaveLength(1);
    expect(() => verify(after!, again.body.signing_secret)).not.toThrow();
    expect(() => verify(after!, rotated.body.signing_secret)).toThrow();
    // Audited, never with a secret.
    const audit = (await call('/v1/audit', user.token)).body;
    expect(
      audit.events
        .filter((event: { kind: string }) => event.kind === 'webhook_changed')
        .map((event: { detail: { change: string } }) => event.detail.change),
    ).toEqual(['secret_rotated', 'secret_rotated', 'added']);
    expect(JSON.stringify(audit)).not.toContain('whsec_');
  });

  it("refuses bad endpoints, an older sign-in and another user's ids with problem+json, and changes nothing", async () => {
    const user = await paidUser(service, 0);
    const other = await paidUser(service, 0);
    const endpoint = await addEndpoint(user.token);
    const before = tablesOf(service);
    const refusals: Array<[Promise<Awaited<ReturnType<typeof call>>>, number, string]> = [
      [call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'http://example.com/hook' } }), 400, 'invalid_request'],
      [call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'not a url' } }), 400, 'invalid_request'],
      [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://user:pw@example.com/hook' } }),
        400,
        'invalid_request',
      ],
      [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://example.com/hook', events: ['exploded'] } }),
        400,
        'invalid_request',
      ],
      [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://example.com/hook', events: [] } }),
        400,
        'invalid_request',
      ],
      [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://example.com/hook', secret: 'mine' } }),
        400,
        'invalid_request',
      ],
      [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: `https://example.com/${'x'.repeat(2100)}` } }),
        400,
        'invalid_request',
      ],
      [call(`/v1/swarm/webhooks/${endpoint.endpoint_id}`, other.token), 404, 'not_found'],
      [call(`/v1/swarm/webhooks/${endpoint.endpoint_id}`, other.token, { method: 'DELETE' }), 404, 'not_found'],
      [call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/rotate-secret`, other.token, { method: 'POST', body: {} }), 404, 'not_found'],
      [call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/deliveries`, other.token), 404, 'not_found'],
      [
        call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/deliveries/00000000-0000-0000-0000-000000000000/resend`, user.token, {
          method: 'POST',
        }),
        404,
        'not_found',
      ],
      [
        call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/rotate-secret`, user.token, {
          method: 'POST',
          body: { previous_secret_seconds: 8 * 86_400 },
        }),
        400,
        'invalid_request',
      ],
    ];
    for (const [pending, status, code] of refusals) {
      const response = await pending;
      expect(response.status, response.text).toBe(status);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(response.body.code).toBe(code);
    }
    clock.advance(16 * 60 * 1000);
    try {
      for (const attempt of [
        call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url: 'https://example.com/hook' } }),
        call(`/v1/swarm/webhooks/${endpoint.endpoint_id}`, user.token, { method: 'DELETE' }),
        call(`/v1/swarm/webhooks/${endpoint.endpoint_id}/rotate-secret`, user.token, { method: 'POST', body: {} }),
      ]) {
        expect((await attempt).body.code).toBe('step_up_required');
      }
    } finally {
      clock.advance(-16 * 60 * 1000);
    }
    expect(tablesOf(service)).toEqual(before);
    expect((await call('/v1/swarm/webhooks', other.token)).body).toEqual({ webhooks: [] });
  });
});

describe('webhooks to private addresses, without the operator flag', () => {
  const clock = new MovableClock();
  let service: TestService;
  let counter: ByteCounter;
  beforeAll(async () => {
    counter = await startByteCounter();
    service = await startSvcApi({ clock, runTiming: TEST_RUN_TIMING });
  });
  afterAll(async () => {
    await stopNodes();
    await service?.close();
    await counter.close();
  });
  const call = (path: string, token: string, init: { method?: string; body?: unknown } = {}) =>
    httpRequest(`${service.baseUrl}${path}`, { ...init, token });
  const addEndpoint = async (token: string, url: string) => {
    const added = await call('/v1/swarm/webhooks', token, { method: 'POST', body: { url, events: ['succeeded'] } });
    expect(added.status, added.text).toBe(201);
    return added.body.endpoint_id as string;
  };
  /** The endpoint's delivery once its first attempt is recorded. */
  const attempted = (token: string, endpointId: string) =>
    waitFor(async () => {
      const [delivery] = (await call(`/v1/swarm/webhooks/${endpointId}/deliveries`, token)).body.deliveries;
      return delivery?.attempts >= 1 && delivery.last_error !== null ? delivery : undefined;
    }, `an attempt to endpoint ${endpointId}`);

  it('refuses an endpoint written as a private address, IPv4 inside IPv6 included, and takes a public one', async () => {
    const user = await paidUser(service, 0);
    const refused = [
      `https://127.0.0.1:${counter.port}/hook`,
      'https://10.0.0.8/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://192.168.1.1/',
      // IPv4-compatible (a URL writes it [::7f00:1]), IPv4-translated, NAT64 and 6to4: judged by the IPv4 they carry.
      'https://[::127.0.0.1]/hook',
      'https://[::10.0.0.8]/hook',
      'https://[::ffff:0:7f00:1]/hook',
      'https://[64:ff9b::169.254.169.254]/latest/meta-data',
      'https://[64:ff9b::7f00:1]/hook',
      'https://[2002:7f00:1::1]/hook',
      'https://[2002:c0a8:101::]/hook',
    ];
    for (const url of refused) {
      const answer = await call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url } });
      expect(answer.status, url).toBe(400);
      expect(answer.body.code).toBe('invalid_request');
      expect(answer.body.detail).toContain('public address');
    }
    for (const url of ['https://[64:ff9b::8.8.8.8]/hook', 'https://[2002:808:808::1]/hook', 'https://[::ffff:8.8.8.8]/hook']) {
      expect((await call('/v1/swarm/webhooks', user.token, { method: 'POST', body: { url } })).status, url).toBe(201);
    }
  });

  it('connects to no private address a name resolves to, and records an open port, a closed one and no address alike', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    // localhost is a name: taken, and judged before each delivery connects.
    const closed = await closedPort();
    const urls = [`https://localhost:${counter.port}/hook`, `https://localhost:${closed}/hook`, 'https://receiver.invalid/hook'];
    const endpoints = [];
    for (const url of urls) endpoints.push(await addEndpoint(user.token, url));
    await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    for (const endpointId of endpoints) {
      const delivery = await attempted(user.token, endpointId);
      expect(delivery).toMatchObject({ status: 'pending', last_status_code: null, last_error: WEBHOOK_NO_CONNECTION_ERROR });
      const detail = (await call(`/v1/swarm/webhooks/${endpointId}/deliveries/${delivery.event_id}`, user.token)).body;
      const attempt = { attempt: 1, status_code: null, error: WEBHOOK_NO_CONNECTION_ERROR, response_excerpt: null };
      expect(detail.attempt_log).toEqual([expect.objectContaining(attempt)]);
    }
    // Not a TLS ClientHello, not a SYN: the port never saw a connection.
    expect({ connections: counter.connections, bytes: counter.bytes }).toEqual({ connections: 0, bytes: 0 });
  });

  it('limits the re-sends of an endpoint, the API and the console together, with 429 problem+json and a remedy', async () => {
    const user = await paidUserWithNode(service, 100, { agents: [AGENT] });
    const endpointId = await addEndpoint(user.token, `https://localhost:${counter.port}/resent`);
    await execute(service, user.token, { user_id: user.email, agent_id: AGENT });
    const { event_id: eventId } = await attempted(user.token, endpointId);
    const resend = () => call(`/v1/swarm/webhooks/${endpointId}/deliveries/${eventId}/resend`, user.token, { method: 'POST' });
    // At the start of a minute of the service's clock: the budget's window does not turn while the test sends.
    clock.advance(60_000 - (clock.now() % 60_000));
    for (let sent = 1; sent <= WEBHOOK_RESENDS_PER_MINUTE; sent += 1) {
      const accepted = await resend();
      expect(accepted.status, accepted.text).toBe(202);
      expect(accepted.headers.get('ratelimit')).toMatch(new RegExp(`^"webhook-resend";r=${WEBHOOK_RESENDS_PER_MINUTE - sent};t=\\d+$`));
    }
    const refused = await resend();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ code: 'rate_limited', resends_per_minute: WEBHOOK_RESENDS_PER_MINUTE });
    expect(refused.body.remedy).toMatch(/^Wait \d+ seconds \(Retry-After\), then re-send/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('ratelimit-policy')).toBe(`"webhook-resend";q=${WEBHOOK_RESENDS_PER_MINUTE};w=60`);
    // The console's re-send button draws on the same budget.
    const cookie = await consoleCookie(service.walletUrl, user.token);
    expect((await consolePost(service.walletUrl, `webhooks/${endpointId}/deliveries/${eventId}/resend`, {}, cookie)).status).toBe(429);
    // Another endpoint's budget is its own (no such delivery: 404, not 429); the next minute this one has its budget again.
    const other = await addEndpoint(user.token, `https://localhost:${counter.port}/other`);
    const noDelivery = `/v1/swarm/webhooks/${other}/deliveries/00000000-0000-0000-0000-000000000000/resend`;
    const none = await call(noDelivery, user.token, { method: 'POST' });
    expect(none.status).toBe(404);
    clock.advance(60_000);
    expect((await resend()).status).toBe(202);
    expect({ connections: counter.connections, bytes: counter.bytes }).toEqual({ connections: 0, bytes: 0 });
  });
});

/** What these requests could change (other tests' nodes keep polling, so the whole database moves meanwhile). */
function tablesOf(service: { db: { prepare(sql: string): { all(): unknown[] } } }): Record<string, unknown[]> {
  return Object.fromEntries(
    ['webhook_endpoints', 'webhook_deliveries', 'webhook_attempts', 'audit_events'].map((table) => [
      table,
      service.db.prepare(`SELECT * FROM ${table} ORDER BY 1, 2`).all(),
    ]),
  );
}

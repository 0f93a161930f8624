// Prometheus metrics (docs/operations.md "Metrics"): served on a listener of their own, never on the API's port; and
// they move with real events: runs accepted and finished (succeeded, failed), the money charged and refunded, runs
// in flight and nodes online read from the database, requests by route pattern, webhook deliveries by outcome, and
// database errors (a real SQLITE_FULL).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import { signWebhookBody } from '../../src/api/payments/webhook-signature.js';
import type { TestService } from '../helpers/svc-api.js';
import { confirmPayment, createPayment, waitFor } from '../helpers/funnel.js';
import { apiClient, httpRequest } from '../helpers/http.js';
import type { Answer } from '../helpers/protocol-node.js';
import { startSvcApi } from '../helpers/svc-api.js';
import { removeTempDirs, uniqueEmail } from '../helpers/temp.js';
import { TEST_RUN_TIMING, execute, paidUserWithNode, stopNodes } from './execute-fixtures.js';
import { namingFindings, parseExposition, sampleValue, type Sample } from './support/prometheus.js';

// The dev review: its input's `rev` tells the stand-in node how to answer (any `rev` meets the agent's schema).
const SKU = AGENT_SKUS.find((sku) => sku.agent_id === 'agent_dev_review_012')!;

describe('GET /metrics', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startSvcApi({ runTiming: TEST_RUN_TIMING, metricsListen: { host: '127.0.0.1', port: 0 } });
  });
  afterAll(async () => {
    await stopNodes();
    await service.close();
    removeTempDirs();
  });

  async function scrape(): Promise<Sample[]> {
    const response = await fetch(service.metricsUrl!);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return parseExposition(await response.text());
  }
  const value = (samples: Sample[], name: string, labels: Record<string, string> = {}): number => sampleValue(samples, name, labels) ?? 0;

  it('is served on its own listener, not on the API port', async () => {
    expect(service.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(service.metricsUrl!).port).not.toBe(new URL(service.baseUrl).port);
    const onApi = await httpRequest(`${service.baseUrl}/metrics`);
    expect(onApi.status).toBe(404);
    const samples = await scrape();
    // Node's own figures come along (heap, event loop, CPU), for the usual dashboards.
    expect(sampleValue(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect((await fetch(service.metricsUrl!.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('names its metrics as Prometheus lints them, keeping what Node reports of its handles and requests', async () => {
    const text = await (await fetch(service.metricsUrl!)).text();
    expect(namingFindings(text)).toEqual([]);
    expect(namingFindings('# TYPE a_total gauge\n# TYPE b counter\n# TYPE c_total counter\n# TYPE d gauge\n')).toHaveLength(2);
    // The count of each kind is there; their sum is what the dropped *_total gauges said.
    expect(text).toMatch(/^# TYPE nodejs_active_handles gauge$/m);
    expect(text).toMatch(/^# TYPE nodejs_active_requests gauge$/m);
  });

  it('counts runs accepted and finished, their charges and refunds, and shows runs in flight and nodes online', async () => {
    let release: (answer: Answer) => void = () => undefined;
    const held = new Promise<Answer>((resolve) => (release = resolve));
    const user = await paidUserWithNode(service, 10 * SKU.price_cents, {
      answer: async (run) => {
        const input = run.input as { rev?: string } | null;
        if (input?.rev === 'fail') return { status: 'failed', output: { error: 'exit', message: 'the agent exited 1' } };
        if (input?.rev === 'hold') return held;
        return { status: 'succeeded', output: { ok: true } };
      },
    });
    // Online from its first poll (read from the database at the scrape).
    await waitFor(async () => (value(await scrape(), 'svc_nodes_online') === 1 ? true : undefined), 'the node online in the gauge');
    const before = await scrape();

    const succeeded = await execute(service, user.token, {
      user_id: user.email,
      agent_id: SKU.agent_id,
      input: { repo: '/srv/app', rev: 'ok' },
    });
    expect(succeeded.body.status).toBe('succeeded');
    const failed = await execute(service, user.token, {
      user_id: user.email,
      agent_id: SKU.agent_id,
      input: { repo: '/srv/app', rev: 'fail' },
    });
    expect(failed.body.status).toBe('failed');

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}): number => value(after, name, labels) - value(before, name, labels);
    expect(delta('svc_runs_accepted_total')).toBe(2);
    expect(delta('svc_runs_finished_total', { status: 'succeeded', reason: '' })).toBe(1);
    expect(delta('svc_runs_finished_total', { status: 'failed', reason: 'exit' })).toBe(1);
    expect(delta('svc_charged_cents_total')).toBe(2 * SKU.price_cents);
    expect(delta('svc_refunded_cents_total')).toBe(SKU.price_cents);

    // A run the node holds is in flight, read from the database at the scrape.
    const holding = execute(service, user.token, { user_id: user.email, agent_id: SKU.agent_id, input: { repo: '/srv/app', rev: 'hold' } });
    await waitFor(
      async () => (value(await scrape(), 'svc_runs', { status: 'running' }) === 1 ? true : undefined),
      'the held run in the gauge',
    );
    release({ status: 'succeeded', output: { ok: true } });
    expect((await holding).body.status).toBe('succeeded');
    expect(value(await scrape(), 'svc_runs', { status: 'running' })).toBe(0);

    await user.node.stop();
  });

  it('times requests by route pattern and status, never by the raw URL', async () => {
    const runId = '00000000-0000-4000-8000-000000000000';
    const user = await paidUserWithNode(service, 0);
    await user.node.stop();
    const before = await scrape();
    for (let i = 0; i < 3; i += 1) await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}`, { token: user.token });
    await httpRequest(`${service.baseUrl}/no/such/${runId}`);
    const response = await fetch(service.metricsUrl!);
    const text = await response.text();
    const after = parseExposition(text);
    const labels = { method: 'GET', route: '/v1/swarm/runs/:run_id', status: '404' };
    const count = (samples: Sample[], l: Record<string, string>): number => value(samples, 'svc_http_request_duration_seconds_count', l);
    expect(count(after, labels) - count(before, labels)).toBe(3);
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    expect(count(after, unmatched) - count(before, unmatched)).toBe(1);
    expect(value(after, 'svc_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(count(after, labels));
    expect(text).not.toContain(runId);
  });

  it('counts webhook deliveries by outcome', async () => {
    const before = await scrape();
    const paymentId = await createPayment(service.baseUrl, 'svc_pay_wallet_fund', uniqueEmail('hook'), 500);
    await confirmPayment(service.baseUrl, paymentId);

    const body = JSON.stringify({ id: `evt_${Date.now()}`, type: 'payment.refunded', created: 1, data: {} });
    const send = (signature: string) =>
      httpRequest(`${service.baseUrl}/v1/payments/webhook`, {
        rawBody: body,
        headers: { 'content-type': 'application/json', 'svc-signature': signature },
      });
    const signature = signWebhookBody(service.secrets.webhookSecret, body, Date.now());
    expect((await send(signature)).body).toEqual({ received: true, ignored: true });
    expect((await send(signature)).body).toEqual({ received: true, duplicate: true });
    expect((await send(signWebhookBody('whsec_not_the_secret', body, Date.now()))).status).toBe(401);

    const after = await scrape();
    const delta = (outcome: string): number =>
      value(after, 'svc_webhook_deliveries_total', { outcome }) - value(before, 'svc_webhook_deliveries_total', { outcome });
    expect({
      applied: delta('applied'),
      ignored: delta('ignored'),
      duplicate: delta('duplicate'),
      bad_signature: delta('bad_signature'),
    }).toEqual({
      applied: 1,
      ignored: 1,
      duplicate: 1,
      bad_signature: 1,
    });
  });

  it('counts the database errors requests meet', async () => {
    const api = apiClient(service.baseUrl);
    const before = value(await scrape(), 'svc_database_errors_total', { source: 'request' });
    // A real full disk to SQLite: the connection capped at its current size (test/api/storage.test.ts).
    const previous = service.db.pragma('max_page_count', { simple: true }) as number;
    service.db.pragma(`max_page_count = ${service.db.pragma('page_count', { simple: true }) as number}`);
    let refusals = 0;
    try {
      for (let attempt = 0; attempt < 2000 && refusals === 0; attempt += 1) {
        const response = await api.post('/v1/swarm/paygate/session', { tier_id: 'svc_starter_agents', user_id: uniqueEmail('full') });
        if (response.status === 503) refusals += 1;
      }
    } finally {
      service.db.pragma(`max_page_count = ${previous}`);
    }
    expect(refusals).toBe(1);
    expect(value(await scrape(), 'svc_database_errors_total', { source: 'request' }) - before).toBe(1);
  });
});

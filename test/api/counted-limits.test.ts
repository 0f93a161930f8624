// Every counted limit holds when its requests race (docs/api.md "Counted limits under concurrency"): 120 requests at
// once, every other one to a second svc-api instance on the same PostgreSQL database (the same instance on SQLite),
// and never one more than the limit gets through. Sign-in codes per address and per client, uploads an hour, the
// upload quota's versions, webhook endpoints, secrets, a run's artifacts and a user's artifact bytes.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_SECRETS_PER_USER } from '../../src/contract/secrets.js';
import { MAX_WEBHOOK_ENDPOINTS } from '../../src/contract/webhook-limits.js';
import { archiveOf, manifestOf } from '../helpers/agent-archives.js';
import { MovableClock, StoppedClock } from '../helpers/clock.js';
import { fundWallet, signIn, signInPaid } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApiPair, type TestService } from '../helpers/svc-api.js';
import { uniqueEmail } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';
const AT_ONCE = 120;
const HOUR = 3_600_000;

type Send = (service: TestService, i: number) => Promise<ApiResponse>;

/** `AT_ONCE` requests sent together, every other one to the second instance; their statuses, counted. */
async function race(pair: [TestService, TestService], send: Send): Promise<Record<number, number>> {
  const responses = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => send(pair[i % 2]!, i)));
  const counts: Record<number, number> = {};
  for (const response of responses) counts[response.status] = (counts[response.status] ?? 0) + 1;
  return counts;
}
const countOf = (service: TestService, sql: string, ...params: unknown[]): number =>
  Number((service.db.prepare(sql).get(...params) as { n: number | string }).n);

const bundle = (version: string, agentId = AGENT) =>
  archiveOf([
    { name: 'agent.json', data: manifestOf(agentId, version) },
    { name: 'main.sh', data: '#!/bin/sh\ncat >/dev/null\necho {}\n', mode: 0o755 },
  ]);
const upload = (service: TestService, token: string, archive: Buffer, agentId = AGENT) =>
  httpRequest(`${service.baseUrl}/v1/swarm/agents/${agentId}/versions`, {
    method: 'POST',
    rawBody: archive,
    headers: { 'content-type': 'application/gzip' },
    token,
  });

describe('sign-in codes (docs/api.md "Sign-in: a verified inbox")', () => {
  const clock = new MovableClock();
  const pair = useSvcApiPair({ clock, signInCodesPerClient: 30 });

  it('one address asked for 120 codes at once is sent five', async () => {
    const email = uniqueEmail('codes-race');
    const counts = await race(pair, (service) => httpRequest(`${service.baseUrl}/v1/auth/email-code`, { body: { email } }));
    expect(counts).toEqual({ 202: 5, 429: AT_ONCE - 5 });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM email_challenges WHERE email = ?', email)).toBe(5);
  });

  it('one client asking for 120 addresses at once is sent thirty codes', async () => {
    // An hour after the codes above, which count against this client too.
    clock.advance(2 * HOUR);
    const since = clock.now();
    const counts = await race(pair, (service) =>
      httpRequest(`${service.baseUrl}/v1/auth/email-code`, { body: { email: uniqueEmail('codes-spray') } }),
    );
    expect(counts).toEqual({ 202: 30, 429: AT_ONCE - 30 });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM email_challenges WHERE created_at >= ?', since)).toBe(30);
  });
});

describe('uploads an hour (docs/api.md "Quota and retention")', () => {
  // Standing still: the hour the uploads are counted in does not turn during the test.
  const pair = useSvcApiPair({ clock: new StoppedClock(Date.now()), uploadsPerHour: 10 });

  it("a user's 120 uploads at once on two instances: ten are taken, the others refused 429", async () => {
    const token = await signIn(pair[0].baseUrl, uniqueEmail('upload-race'));
    const archive = await bundle('1.0.0');
    const counts = await race(pair, (service) => upload(service, token, archive));
    // The first stores the version, the next nine are the same bytes again (200, created: false).
    expect(counts).toEqual({ 201: 1, 200: 9, 429: AT_ONCE - 10 });
    for (const service of pair) expect((await upload(service, token, archive)).status).toBe(429);
  });
});

describe('the upload quota\'s versions (docs/api.md "Quota and retention")', () => {
  const pair = useSvcApiPair({ uploadQuota: { maxVersions: 10 }, uploadsPerHour: 0 });

  it('120 new versions of as many agents at once on two instances: ten are stored, the others refused 413', async () => {
    const email = uniqueEmail('quota-race');
    const token = await signIn(pair[0].baseUrl, email);
    // Agents of the user's own, each its own: the quota is the user's across agents.
    const archives = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) => bundle('1.0.0', `race_agent_${i}`)));
    const counts = await race(pair, (service, i) => upload(service, token, archives[i]!, `race_agent_${i}`));
    expect(counts).toEqual({ 201: 10, 413: AT_ONCE - 10 });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM agent_versions WHERE user_id = ?', email)).toBe(10);
  });
});

describe('webhook endpoints, secrets and artifacts (docs/api.md "Webhooks", "Secrets", "Run artifacts")', () => {
  const pair = useSvcApiPair({ artifactLimits: { maxRunFiles: 10, maxUserBytes: 5 * 1024 } });

  it(`120 webhook endpoints added at once on two instances: ${MAX_WEBHOOK_ENDPOINTS} are kept, the others refused 409`, async () => {
    const email = uniqueEmail('hooks-race');
    const token = await signIn(pair[0].baseUrl, email);
    const counts = await race(pair, (service, i) =>
      httpRequest(`${service.baseUrl}/v1/swarm/webhooks`, { token, body: { url: `https://hooks.example.com/race/${i}` } }),
    );
    expect(counts).toEqual({ 201: MAX_WEBHOOK_ENDPOINTS, 409: AT_ONCE - MAX_WEBHOOK_ENDPOINTS });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM webhook_endpoints WHERE user_id = ?', email)).toBe(MAX_WEBHOOK_ENDPOINTS);
  });

  it(`120 secrets set at once on two instances: ${MAX_SECRETS_PER_USER} are kept, the others refused 409`, async () => {
    const email = uniqueEmail('secrets-race');
    const token = await signIn(pair[0].baseUrl, email);
    const counts = await race(pair, (service, i) =>
      httpRequest(`${service.baseUrl}/v1/swarm/secrets/KEY_${i}`, { method: 'PUT', token, body: { value: `value ${i}` } }),
    );
    expect(counts).toEqual({ 200: MAX_SECRETS_PER_USER, 409: AT_ONCE - MAX_SECRETS_PER_USER });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM user_secrets WHERE user_id = ?', email)).toBe(MAX_SECRETS_PER_USER);
  });

  /** A node's own run, running on it under its lease. */
  async function heldRun(): Promise<{ run_id: string; lease_id: string; credential: string; email: string }> {
    const email = uniqueEmail('artifacts-race');
    const node = await enrollNode(pair[0].baseUrl, email);
    await fundWallet(pair[0].baseUrl, email, 100);
    await signInPaid(pair[0].baseUrl, email);
    const started = await httpRequest(`${pair[0].baseUrl}/v1/swarm/execute`, {
      token: node.credential,
      headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
      body: { user_id: email, agent_id: AGENT, input: { thresholds: {} } },
    });
    expect(started.status, started.text).toBe(202);
    return { run_id: started.body.run_id, lease_id: started.body.lease.lease_id, credential: node.credential, email };
  }
  const put = (service: TestService, run: Awaited<ReturnType<typeof heldRun>>, name: string, bytes: Buffer) =>
    httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/${name}?lease_id=${run.lease_id}`, {
      method: 'PUT',
      token: run.credential,
      headers: { 'content-type': 'application/octet-stream' },
      rawBody: bytes,
    });

  it('120 artifacts of one run at once on two instances: the run keeps ten, the others are refused 413', async () => {
    const run = await heldRun();
    const counts = await race(pair, (service, i) => put(service, run, `part-${i}.txt`, Buffer.from('the same bytes each time\n')));
    expect(counts).toEqual({ 201: 10, 413: AT_ONCE - 10 });
    expect(countOf(pair[0], 'SELECT count(*) AS n FROM run_artifacts WHERE run_id = ?', run.run_id)).toBe(10);
  });

  it("120 artifacts of 1 KiB each at once on two instances: the user's quota of 5 KiB keeps five", async () => {
    const run = await heldRun();
    const counts = await race(pair, (service, i) => put(service, run, `kib-${i}.bin`, Buffer.alloc(1024, i)));
    expect(counts).toEqual({ 201: 5, 413: AT_ONCE - 5 });
    const stored = 'SELECT coalesce(sum(size_bytes), 0) AS n FROM artifact_blobs WHERE user_id = ? AND complete = 1';
    expect(countOf(pair[0], stored, run.email)).toBe(5 * 1024);
  });
});

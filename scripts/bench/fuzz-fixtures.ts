// What the fuzz bench (./fuzz.ts) makes before the load, through the API as a client would, so its requests reach
// the routes past their credential checks and name ids that exist: a paid, funded user signed in by mail (the main
// one), a node of theirs enrolled and serving an agent, runs (one finished with a log and an artifact, one queued),
// a secret, a budget, a webhook endpoint, an uploaded agent version, a console session, a pending payment, a session
// and a sign-in challenge; and a spare user whose credentials the routes that end one are given.
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { fundWallet, signIn, until } from './support.js';
import type { Fixtures, Principal } from './fuzz-requests.js';

const OPS = 'agent_ops_monitor_004';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** One request of the setup; `bearer` as the credential, `headers` more of them. */
export interface CallOptions {
  bearer?: string;
  body?: unknown;
  raw?: Buffer;
  headers?: Record<string, string>;
}

export async function call(origin: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${origin}${path}`, {
    method,
    headers,
    redirect: 'manual',
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : options.raw !== undefined ? { body: options.raw } : {}),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: response.status, body, headers: response.headers };
}

/** As call, throwing unless the status is below 400. */
export async function ok(origin: string, method: string, path: string, options: CallOptions = {}): Promise<Record<string, unknown>> {
  const answer = await call(origin, method, path, options);
  if (answer.status >= 400) {
    throw new Error(`setup: ${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  }
  return answer.body;
}

/** A signed-in, funded user with a node that serves the ops agent, and a console session. */
export async function principal(origin: string, email: string): Promise<Principal> {
  const token = await signIn(origin, email);
  await fundWallet(origin, email, token, 100_000);
  const deploy = await ok(origin, 'POST', '/v1/swarm/nodes/deploy-token', { bearer: token });
  const enrolled = await ok(origin, 'POST', '/v1/swarm/nodes/enroll', { bearer: deploy.deploy_token as string });
  const nodeCredential = enrolled.node_credential as string;
  await ok(origin, 'PUT', `/v1/swarm/nodes/self/agents/${OPS}`, { bearer: nodeCredential });
  await poll(origin, nodeCredential);
  return { email, token, nodeCredential, nodeId: enrolled.node_id as string, cookie: await consoleSession(origin, token) };
}

/**
 * The console's session cookie, from the sign-in link opened as a typed address is (`Sec-Fetch-Site: none`): any
 * other opening asks "Continue as …?" first (docs/api.md "Wallet page").
 */
export async function consoleSession(origin: string, token: string, headers: Record<string, string> = {}): Promise<string> {
  const url = `/wallet/login?token=${token}&intent=swarm_private_access`;
  const answer = await call(origin, 'GET', url, { headers: { 'sec-fetch-site': 'none', ...headers } });
  const cookie = /svc_wallet=([^;]+)/.exec(answer.headers.get('set-cookie') ?? '')?.[1];
  if (cookie === undefined) throw new Error(`setup: the wallet sign-in answered ${answer.status} without a session cookie`);
  return cookie;
}

function poll(origin: string, credential: string): Promise<Record<string, unknown>> {
  const body = { hostname: 'fuzz', version: 'fuzz', capacity: 4, running: [], wait_seconds: 0 };
  return ok(origin, 'POST', '/v1/swarm/nodes/poll', { bearer: credential, body });
}

/** An agent bundle the service takes (docs/sections/agent-upload.md): agent.json and its program, gzipped tar. */
export async function bundleOf(agentId: string, version: string): Promise<Buffer> {
  const pack = tar.pack();
  const manifest = { agent_id: agentId, version, entry: ['node', 'main.mjs'], input_schema: { type: 'object' } };
  pack.entry({ name: 'agent.json' }, JSON.stringify(manifest));
  pack.entry({ name: 'main.mjs' }, "process.stdout.write('{}');\n");
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

export async function makeFixtures(origin: string, keys: { jwtKey: Buffer; webhookSecret: string; trapPort: number }): Promise<Fixtures> {
  const main = await principal(origin, 'fuzz-main@example.com');
  const spare = await principal(origin, 'fuzz-spare@example.com');
  const bearer = main.token;
  // A webhook endpoint by name on the bench's loopback trap: a name passes registration; its deliveries must not.
  const endpoint = await ok(origin, 'POST', '/v1/swarm/webhooks', { bearer, body: { url: `https://localhost:${keys.trapPort}/hook` } });
  const endpointId = endpoint.endpoint_id as string;
  await ok(origin, 'PUT', '/v1/swarm/secrets/FUZZ_SECRET', { bearer, body: { value: 'fuzz' } });
  await ok(origin, 'PUT', '/v1/swarm/budgets/all/month', { bearer, body: { cap_cents: 100_000_000 } });
  const version = '1.0.0-fuzz';
  const upload = await ok(origin, 'POST', `/v1/swarm/agents/${OPS}/versions`, {
    bearer,
    raw: await bundleOf(OPS, version),
    headers: { 'content-type': 'application/gzip' },
  });
  // The node takes the upload as the agent's current version; the built-in one is what the bench's runs need not.
  await ok(origin, 'DELETE', `/v1/swarm/agents/${OPS}/current`, { bearer });

  // A run finished through the node, with a log line and an artifact, and one left queued.
  const execute = (key: string, more: Record<string, unknown> = {}): Promise<Record<string, unknown>> =>
    ok(origin, 'POST', '/v1/swarm/execute', {
      bearer,
      body: { user_id: main.email, agent_id: OPS, ...more },
      headers: { prefer: 'respond-async', 'idempotency-key': key },
    });
  const first = await execute('fuzz-first');
  let lease = '';
  await until(async () => {
    const polled = await poll(origin, main.nodeCredential);
    const run = (polled.runs as { run_id: string; lease_id: string }[]).find((each) => each.run_id === first.run_id);
    lease = run?.lease_id ?? lease;
    return lease !== '';
  }, 'the node to claim the first run');
  const runId = first.run_id as string;
  const node = main.nodeCredential;
  const entries = [{ seq: 0, stream: 'stdout', at: new Date().toISOString(), text: 'fuzz' }];
  await ok(origin, 'POST', `/v1/swarm/runs/${runId}/logs`, { bearer: node, body: { lease_id: lease, entries } });
  await ok(origin, 'PUT', `/v1/swarm/runs/${runId}/artifacts/report.txt?lease_id=${lease}`, {
    bearer: node,
    raw: Buffer.from('fuzz\n'),
    headers: { 'content-type': 'application/octet-stream' },
  });
  const result = { lease_id: lease, status: 'succeeded', output: { ok: true } };
  await ok(origin, 'POST', `/v1/swarm/runs/${runId}/result`, { bearer: node, body: result });
  const second = await execute('fuzz-second', { queue_seconds: 86_400 });

  let eventIds: string[] = [];
  await until(async () => {
    const deliveries = await ok(origin, 'GET', `/v1/swarm/webhooks/${endpointId}/deliveries`, { bearer });
    eventIds = (deliveries.deliveries as { event_id: string }[]).map((each) => each.event_id);
    return eventIds.length > 0;
  }, 'the webhook deliveries of the runs');
  const checkout = { offer_id: 'svc_pay_wallet_fund', customer_email: main.email, amount_cents: 100 };
  const payment = await ok(origin, 'POST', '/sandbox/payments', { body: checkout });
  const session = await ok(origin, 'POST', '/v1/swarm/paygate/session', { body: { tier_id: 'svc_starter_agents', user_id: main.email } });
  const challenge = await ok(origin, 'POST', '/v1/auth/email-code', { body: { email: main.email } });
  const deploy = await ok(origin, 'POST', '/v1/swarm/nodes/deploy-token', { bearer });
  return {
    main,
    spare,
    deployToken: deploy.deploy_token as string,
    runIds: [runId, second.run_id as string],
    leaseId: lease,
    artifactName: 'report.txt',
    secretName: 'FUZZ_SECRET',
    endpointId,
    eventIds,
    paymentId: payment.payment_id as string,
    sessionId: session.session_id as string,
    challengeId: challenge.challenge_id as string,
    version,
    digest: upload.digest as string,
    trapPort: keys.trapPort,
    jwtKey: keys.jwtKey,
    webhookSecret: keys.webhookSecret,
  };
}

// Load test of POST /v1/swarm/execute against bare node:http, both on loopback, driven the same way from this
// process with an undici Pool. svc-api is the built binary (sandbox runtime, fresh data dir); the user is signed
// in and funded through the real funnel. Every execute carries a new Idempotency-Key, so each one is a real run:
// two transactions, one debit, one run row. Run with: npm run bench:execute -- [--requests N] [--connections C]
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { findAgentSku } from '../../src/contract/agents.js';
import { MAX_NODE_CONCURRENCY } from '../../src/contract/node-protocol.js';
import { fundWallet, positiveInteger, signIn, startServer, table } from './support.js';
import { startStandInNode, type StandInNode } from './stand-in-node.js';

declare const SCRIPT_DIR: string;
declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:execute -- [options]

  --requests <n>      measured requests per server             default 20000
  --connections <n>   concurrent connections (undici Pool)      default 32
  --warmup <n>        unmeasured requests first, per server     default 2000
  --max-seconds <n>   stop a server's run after this long       default 60
  --agent <agent_id>  the agent each execute runs               default agent_ops_monitor_004
  --log-level <lvl>   svc-api's SVC_LOG_LEVEL                   default silent
  --cpu-prof <dir>    write a V8 CPU profile of svc-api into <dir> (open it in Chrome DevTools)
`;

interface LoadResult {
  completed: number;
  seconds: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  statuses: Map<number, number>;
}

interface LoadPlan {
  origin: string;
  path: string;
  headers: () => Record<string, string>;
  body: string;
  requests: number;
  connections: number;
  maxSeconds: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '20000' },
      connections: { type: 'string', default: '32' },
      warmup: { type: 'string', default: '2000' },
      'max-seconds': { type: 'string', default: '60' },
      agent: { type: 'string', default: 'agent_ops_monitor_004' },
      'log-level': { type: 'string', default: 'silent' },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const requests = positiveInteger(values.requests, '--requests');
  const connections = positiveInteger(values.connections, '--connections');
  const warmup = positiveInteger(values.warmup, '--warmup');
  const maxSeconds = positiveInteger(values['max-seconds'], '--max-seconds');
  const sku = findAgentSku(values.agent);
  if (sku === undefined) throw new Error(`--agent: no agent ${values.agent}`);

  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const children: ChildProcess[] = [];
  let node: StandInNode | undefined;
  try {
    const api = await startServer(
      [
        ...(values['cpu-prof'] === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']]),
        join(REPO_ROOT, 'bin/svc-api.js'),
        '--port', '0', '--data-dir', dataDir, '--sandbox'],
      { SVC_LOG_LEVEL: values['log-level'] },
      /svc-api listening on (\S+)/,
      children,
    );
    const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
    const token = await signIn(api, email);
    const fundedCents = sku.price_cents * (requests + warmup + 1);
    await fundWallet(api, email, token, fundedCents);
    node = await startStandInNode(api, token, sku.agent_id, Math.min(connections, MAX_NODE_CONCURRENCY));

    const body = JSON.stringify({ user_id: email, agent_id: sku.agent_id });
    const executeHeaders = (): Record<string, string> => ({
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      'idempotency-key': randomUUID(),
    });
    // One real response, so the bare server answers with exactly these bytes.
    const sample = await fetch(`${api}/v1/swarm/execute`, { method: 'POST', headers: executeHeaders(), body });
    const canned = await sample.text();
    if (sample.status !== 200) throw new Error(`execute answered ${sample.status}: ${canned}`);

    const bare = await startServer([join(SCRIPT_DIR, 'bare-server.mjs')], { BENCH_CANNED_RESPONSE: canned }, /listening on (\S+)/, children);

    const plan = { path: '/v1/swarm/execute', body, connections, maxSeconds };
    process.stderr.write(`warming up (${warmup} requests each)…\n`);
    await load({ ...plan, origin: api, headers: executeHeaders, requests: warmup });
    await load({ ...plan, origin: bare, headers: executeHeaders, requests: warmup });
    process.stderr.write(`measuring svc-api (${requests} requests, ${connections} connections)…\n`);
    const svc = await load({ ...plan, origin: api, headers: executeHeaders, requests });
    process.stderr.write('measuring bare node:http…\n');
    const baseline = await load({ ...plan, origin: bare, headers: executeHeaders, requests });

    const ran = 1 + warmup + svc.completed;
    const okRuns = 1 + countOf(svc.statuses, 200) + warmup;
    const wallet = (await (await fetch(`${api}/v1/swarm/wallet`, { headers: { authorization: `Bearer ${token}` } })).json()) as { balance_cents: number };
    const expectedBalance = fundedCents - okRuns * sku.price_cents;

    const rows = [
      ['', 'req/s', 'p50 ms', 'p99 ms', 'completed', 'non-200'],
      row('svc-api execute', svc),
      row('bare node:http', baseline),
    ];
    process.stdout.write(
      [
        `execute bench: ${sku.agent_id} (${sku.price_cents} cents a run), ${connections} connections, loopback, node ${process.version}`,
        table(rows),
        `svc-api throughput is ${(svc.requestsPerSecond / baseline.requestsPerSecond).toFixed(3)} of bare node:http ` +
          `(bare is ${(baseline.requestsPerSecond / svc.requestsPerSecond).toFixed(1)}x); p50 ${(svc.p50Ms / baseline.p50Ms).toFixed(1)}x, p99 ${(svc.p99Ms / baseline.p99Ms).toFixed(1)}x`,
        `ledger check: ${ran} executes sent, ${okRuns} charged; balance ${wallet.balance_cents} cents, expected ${expectedBalance}: ${wallet.balance_cents === expectedBalance ? 'ok' : 'MISMATCH'}`,
        '',
      ].join('\n'),
    );
    if (wallet.balance_cents !== expectedBalance || svc.completed !== requests || countOf(svc.statuses, 200) !== svc.completed) {
      process.exitCode = 1;
    }
  } finally {
    await node?.stop();
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Bounded: `connections` loops, each one request at a time, until `requests` completed or the time is up. */
async function load(plan: LoadPlan): Promise<LoadResult> {
  const pool = new Pool(plan.origin, { connections: plan.connections, pipelining: 1 });
  const latencies = new Float64Array(plan.requests);
  const statuses = new Map<number, number>();
  let started = 0;
  let completed = 0;
  const begin = performance.now();
  const deadline = begin + plan.maxSeconds * 1000;
  const worker = async (): Promise<void> => {
    while (started < plan.requests && performance.now() < deadline) {
      started += 1;
      const sent = performance.now();
      const response = await pool.request({ path: plan.path, method: 'POST', headers: plan.headers(), body: plan.body });
      await response.body.text();
      latencies[completed] = performance.now() - sent;
      completed += 1;
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
    }
  };
  try {
    await Promise.all(Array.from({ length: plan.connections }, worker));
  } finally {
    await pool.close();
  }
  const seconds = (performance.now() - begin) / 1000;
  const sorted = latencies.subarray(0, completed).sort();
  return {
    completed,
    seconds,
    requestsPerSecond: completed / seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    statuses,
  };
}

function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

function countOf(statuses: Map<number, number>, status: number): number {
  return statuses.get(status) ?? 0;
}

function row(name: string, result: LoadResult): string[] {
  const others = [...result.statuses].filter(([status]) => status !== 200).reduce((sum, [, count]) => sum + count, 0);
  return [name, Math.round(result.requestsPerSecond).toString(), result.p50Ms.toFixed(2), result.p99Ms.toFixed(2), String(result.completed), String(others)];
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:execute: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

// How fast the console's pages are (docs/api.md "Console"), each against a baseline measured in the same rounds: the
// sign-in page, the wallet page as it was (the same template and stylesheet, nothing read from the database), so a
// ratio is what a page's reads and markup add:
// - first byte: an HTTP client (keep-alive, as a browser's) from sending the request to the answer's headers, and to
//   its last byte; GET /healthz, the service's smallest answer, is printed beside as the floor;
// - render: headless Chromium (Debian's /usr/bin/chromium) from navigation start to the load event (the page parsed,
//   styled and laid out); the first contentful paint beside it (Chromium reports it to a frame's time);
// - svc-api's CPU time a page (user and system, from /proc), over --cpu-requests fetches of each page in turn: less at
//   the mercy of other load on the machine than wall time, which waits for the cores too.
// The data is made through the API first, as a user would have it: a node enrolled with a deploy token, --runs runs
// of its own reported through it (one in ten failed), the page's run with --log-lines lines of log and an artifact,
// a budget, secrets, a webhook endpoint whose deliveries pile up. Each round visits every page once, in an order that
// rotates (a page's figure in a round is the median of --requests fetches and --renders navigations); each ratio is
// taken within its round (paired), and the rounds' spread says whether it can be judged.
// svc-api runs as its own process, started once.
// Run with: npm run bench:console -- [--rounds N] [--warmup N] [--runs N] [--log-lines N]
import { type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';
import {
  cpuMillisecondsOf,
  fundWallet,
  median,
  positiveInteger,
  signIn,
  spreadLine,
  spreadOf,
  SPREAD_LIMIT,
  startServerProcess,
  table,
} from './support.js';

declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:console -- [options]

  --rounds <n>      rounds, each visiting every page once         default 20
  --warmup <n>      unmeasured rounds first                        default 3
  --runs <n>        runs of the user's before the rounds           default 300
  --log-lines <n>   lines of the log on the run page               default 1000
  --requests <n>    fetches of each page a round                   default 9
  --renders <n>     navigations to each page a round               default 3
  --cpu-requests <n> fetches of each page for its CPU time, 3 times default 1000
`;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '3' },
    runs: { type: 'string', default: '300' },
    'log-lines': { type: 'string', default: '1000' },
    requests: { type: 'string', default: '9' },
    renders: { type: 'string', default: '3' },
    'cpu-requests': { type: 'string', default: '1000' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const rounds = positiveInteger(values.rounds, '--rounds');
const warmup = Number(values.warmup);
const runCount = positiveInteger(values.runs, '--runs');
const logLines = positiveInteger(values['log-lines'], '--log-lines');
const requests = positiveInteger(values.requests, '--requests');
const renders = positiveInteger(values.renders, '--renders');
const cpuRequests = positiveInteger(values['cpu-requests'], '--cpu-requests');
/** Two agents, with inputs their schemas take, so the usage page has two of them. */
const AGENTS = ['agent_ops_monitor_004', 'agent_svc_skills_005'];
const INPUTS: Record<string, Record<string, string>> = { agent_ops_monitor_004: {}, agent_svc_skills_005: { question: 'What is a node?' } };

async function call(
  api: string,
  method: string,
  path: string,
  bearer: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Record<string, any>> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'application/octet-stream' : 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, any>);
}

/** The user's data, through the API: what the pages will show. Returns the ids the pages are about. */
async function makeData(api: string, email: string, token: string): Promise<{ runId: string; endpointId: string }> {
  const hook = await call(api, 'POST', '/v1/swarm/webhooks', token, { url: 'https://hooks.invalid/console-bench', description: 'bench' });
  await call(api, 'PUT', '/v1/swarm/budgets/all/month', token, { cap_cents: 100_000 });
  for (const name of ['OPENAI_API_KEY', 'SMTP_PASSWORD', 'GITHUB_TOKEN'])
    await call(api, 'PUT', `/v1/swarm/secrets/${name}`, token, { value: `bench-${name}-value` });
  const deploy = await call(api, 'POST', '/v1/swarm/nodes/deploy-token', token);
  const node = (await call(api, 'POST', '/v1/swarm/nodes/enroll', deploy.deploy_token as string)).node_credential as string;
  for (const agent of AGENTS) await call(api, 'PUT', `/v1/swarm/nodes/self/agents/${agent}`, node);
  await call(api, 'POST', '/v1/swarm/nodes/poll', node, { hostname: 'bench', version: 'bench', capacity: 1, running: [], wait_seconds: 0 });
  let pageRun = '';
  for (let index = 0; index < runCount; index += 1) {
    const started = await call(
      api,
      'POST',
      '/v1/swarm/execute',
      node,
      { user_id: email, agent_id: AGENTS[index % AGENTS.length], input: INPUTS[AGENTS[index % AGENTS.length]!] },
      { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
    );
    const lease = (started.lease as { lease_id: string }).lease_id;
    const runId = started.run_id as string;
    if (index === runCount - 1) {
      pageRun = runId;
      for (let from = 0; from < logLines; from += 500) {
        const entries = Array.from({ length: Math.min(500, logLines - from) }, (_, offset) => ({
          seq: from + offset,
          stream: offset % 7 === 0 ? 'stderr' : 'stdout',
          at: new Date().toISOString(),
          text: `line ${from + offset}: checked endpoint ${offset % 13} in ${offset % 97} ms`,
        }));
        await call(api, 'POST', `/v1/swarm/runs/${runId}/logs`, node, { lease_id: lease, entries });
      }
      await call(api, 'PUT', `/v1/swarm/runs/${runId}/artifacts/report.csv?lease_id=${lease}`, node, 'endpoint,ms\n'.repeat(200));
    }
    const failed = index % 10 === 9;
    await call(api, 'POST', `/v1/swarm/runs/${runId}/result`, node, {
      lease_id: lease,
      ...(failed
        ? { status: 'failed', output: { error: 'check_failed', message: 'an endpoint did not answer' } }
        : { status: 'succeeded', output: { summary: 'all checks passed', checks: 13 } }),
    });
  }
  return { runId: pageRun, endpointId: hook.endpoint_id as string };
}

interface Target {
  name: string;
  path: string;
  signedIn: boolean;
}

interface Sample {
  firstByteMs: number;
  lastByteMs: number;
  paintMs: number;
  loadMs: number;
}

/** One request as a browser's keep-alive connection sends it: until the headers, and until the last byte. */
async function fetchOnce(url: string, cookie: string | undefined): Promise<{ firstByteMs: number; lastByteMs: number }> {
  const started = performance.now();
  const response = await fetch(url, { headers: cookie === undefined ? {} : { cookie }, redirect: 'manual' });
  const firstByteMs = performance.now() - started;
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return { firstByteMs, lastByteMs: performance.now() - started };
}

/** One navigation in Chromium: to the first contentful paint, and to the load event (from navigation start). */
async function renderOnce(page: Page, url: string): Promise<{ paintMs: number; loadMs: number }> {
  const response = await page.goto(url, { waitUntil: 'load' });
  if (response?.status() !== 200) throw new Error(`${url} answered ${response?.status()} in Chromium`);
  // A string, not a function: this script is compiled without the DOM's types; it runs in the page.
  return page.evaluate<{ paintMs: number; loadMs: number }>(`new Promise((resolve) => {
    const load = performance.getEntriesByType('navigation')[0].loadEventEnd;
    new PerformanceObserver((list, observer) => {
      const paint = list.getEntriesByName('first-contentful-paint')[0];
      if (paint) { observer.disconnect(); resolve({ paintMs: paint.startTime, loadMs: load }); }
    }).observe({ type: 'paint', buffered: true });
  })`);
}

const scratch = mkdtempSync(join(tmpdir(), 'bench-console-'));
const children: ChildProcess[] = [];
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
try {
  const { origin: api, pid } = await startServerProcess(
    [
      join(REPO_ROOT, 'bin', 'svc-api.js'),
      '--sandbox',
      '--port',
      '0',
      '--data-dir',
      join(scratch, 'api'),
      '--rate-limit',
      '100000',
      '--max-connections-per-address',
      '1024',
    ],
    { NO_COLOR: '1', SVC_LOG_LEVEL: 'warn' },
    /svc-api listening on (\S+)/,
    children,
  );
  const email = 'bench-console@example.com';
  const token = await signIn(api, email);
  await fundWallet(api, email, token, runCount * 10 + 1000);
  const started = performance.now();
  const { runId, endpointId } = await makeData(api, email, token);
  process.stdout.write(
    `data made through the API in ${((performance.now() - started) / 1000).toFixed(1)} s: ${runCount} runs, ${logLines} log lines on the run page\n`,
  );

  const signInAnswer = await fetch(`${api}/wallet/login?token=${encodeURIComponent(token)}`, { redirect: 'manual' });
  const cookie = /^(svc_wallet=[^;]+)/.exec(signInAnswer.headers.get('set-cookie') ?? '')![1]!;
  const signedInContext = await browser.newContext();
  await signedInContext.addCookies([{ name: 'svc_wallet', value: cookie.slice('svc_wallet='.length), url: `${api}/wallet` }]);
  const signedInPage = await signedInContext.newPage();
  const signedOutPage = await (await browser.newContext()).newPage();

  const health: Target = { name: 'GET /healthz', path: '/healthz', signedIn: false };
  const signInPage: Target = { name: 'sign-in page', path: '/wallet/login', signedIn: false };
  const pages: Target[] = [
    { name: 'wallet', path: '/wallet/login', signedIn: true },
    { name: 'nodes', path: '/wallet/nodes', signedIn: true },
    { name: 'runs', path: '/wallet/runs', signedIn: true },
    { name: `run (${logLines} log lines)`, path: `/wallet/runs/${runId}`, signedIn: true },
    { name: 'usage', path: '/wallet/usage', signedIn: true },
    { name: 'budgets', path: '/wallet/budgets', signedIn: true },
    { name: 'secrets', path: '/wallet/secrets', signedIn: true },
    { name: 'webhooks', path: '/wallet/webhooks', signedIn: true },
    { name: 'webhook deliveries', path: `/wallet/webhooks/${endpointId}`, signedIn: true },
  ];
  const targets = [health, signInPage, ...pages];
  const samples = new Map<string, Sample[]>(targets.map((target) => [target.name, []]));
  for (let round = 0; round < warmup + rounds; round += 1) {
    const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
    for (const target of order) {
      const url = `${api}${target.path}`;
      const fetched: Array<{ firstByteMs: number; lastByteMs: number }> = [];
      for (let each = 0; each < requests; each += 1) fetched.push(await fetchOnce(url, target.signedIn ? cookie : undefined));
      // /healthz is JSON: a browser's render of it says nothing about pages; its first byte is the floor.
      const rendered: Array<{ paintMs: number; loadMs: number }> = [];
      for (let each = 0; target !== health && each < renders; each += 1)
        rendered.push(await renderOnce(target.signedIn ? signedInPage : signedOutPage, url));
      if (round < warmup) continue;
      samples.get(target.name)!.push({
        firstByteMs: median(fetched.map((one) => one.firstByteMs)),
        lastByteMs: median(fetched.map((one) => one.lastByteMs)),
        paintMs: median(rendered.map((one) => one.paintMs)),
        loadMs: median(rendered.map((one) => one.loadMs)),
      });
    }
  }

  // svc-api's CPU a page: each page's fetches in turn, three passes; the middle pass's figure.
  const cpu = new Map<string, number[]>(targets.map((target) => [target.name, []]));
  for (let pass = 0; pass < 3; pass += 1) {
    for (const target of targets) {
      const before = cpuMillisecondsOf(pid);
      for (let each = 0; each < cpuRequests; each += 1) await fetchOnce(`${api}${target.path}`, target.signedIn ? cookie : undefined);
      cpu.get(target.name)!.push((cpuMillisecondsOf(pid) - before) / cpuRequests);
    }
  }
  const cpuOf = (name: string) => median(cpu.get(name)!);

  const ratios = (name: string, baseline: string, field: keyof Sample): number[] =>
    samples.get(name)!.map((sample, round) => sample[field] / samples.get(baseline)![round]![field]);
  const med = (name: string, field: keyof Sample) => median(samples.get(name)!.map((sample) => sample[field]));
  const rows = [
    [
      'page',
      'first byte ms',
      'vs sign-in page',
      'last byte ms',
      'CPU ms',
      'vs sign-in page',
      'first paint ms',
      'load ms',
      'vs sign-in page',
    ],
  ];
  const cpuRatio = (name: string) => `${(cpuOf(name) / cpuOf(signInPage.name)).toFixed(2)}x`;
  rows.push([
    health.name,
    med(health.name, 'firstByteMs').toFixed(2),
    `${median(ratios(health.name, signInPage.name, 'firstByteMs')).toFixed(2)}x`,
    med(health.name, 'lastByteMs').toFixed(2),
    cpuOf(health.name).toFixed(2),
    cpuRatio(health.name),
    '',
    '',
    '',
  ]);
  rows.push([
    signInPage.name,
    med(signInPage.name, 'firstByteMs').toFixed(2),
    '',
    med(signInPage.name, 'lastByteMs').toFixed(2),
    cpuOf(signInPage.name).toFixed(2),
    '',
    med(signInPage.name, 'paintMs').toFixed(1),
    med(signInPage.name, 'loadMs').toFixed(1),
    '',
  ]);
  const spreads: string[] = [];
  let judged = true;
  for (const target of pages) {
    const byteRatios = ratios(target.name, signInPage.name, 'firstByteMs');
    const loadRatios = ratios(target.name, signInPage.name, 'loadMs');
    judged &&= spreadOf(byteRatios) <= SPREAD_LIMIT && spreadOf(loadRatios) <= SPREAD_LIMIT;
    rows.push([
      target.name,
      med(target.name, 'firstByteMs').toFixed(2),
      `${median(byteRatios).toFixed(2)}x`,
      med(target.name, 'lastByteMs').toFixed(2),
      cpuOf(target.name).toFixed(2),
      cpuRatio(target.name),
      med(target.name, 'paintMs').toFixed(1),
      med(target.name, 'loadMs').toFixed(1),
      `${median(loadRatios).toFixed(2)}x`,
    ]);
    spreads.push(`${target.name}, first byte: ${spreadLine(byteRatios)}`, `${target.name}, load: ${spreadLine(loadRatios)}`);
  }
  process.stdout.write(
    `\nconsole pages, ${rounds} rotating rounds (+${warmup} warm-up), medians; ratios paired within each round\n\n${table(rows)}\n\n${spreads.join('\n')}\n`,
  );
  if (!judged)
    process.stdout.write(
      '\nSome ratios spread too wide to judge on this machine now: run again when it is quieter, or with more --rounds.\n',
    );
} finally {
  await browser.close();
  for (const child of children) child.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}

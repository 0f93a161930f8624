// No client input takes the service down: a fuzz bench, not a timed test. svc-api runs as its own process on each
// engine (SQLite in a temp dir; a PostgreSQL server started for the bench, as an unprivileged user), with short body
// timers; the bench reads its OpenAPI document from GET /openapi.json, makes a user, a node, runs and the rest through
// the API (./fuzz-fixtures.ts), checks what a status cannot tell (./fuzz-probes.ts), then sends `--requests` cases
// at every route in turn, from a seed (./fuzz-cases.ts): through undici when well-formed, as raw bytes on a socket
// when not (./fuzz-wire.ts). It counts 500 answers, error-level lines of svc-api's log, exits of the process
// (./fuzz-service.ts starts it again on the same data and goes on), and svc-api's open file descriptors and resident
// set before the load and after `--idle-seconds` idle. A 503 `service_unavailable` is counted apart. Every finding
// names its case's index: `--only <index>` sends that case again, alone, and prints its bytes (./fuzz-report.ts).
// Run with: npm run bench:fuzz -- [--engine sqlite|postgres|both] [--requests 50000] [--seed 1] [--only <index>]
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, setGlobalDispatcher } from 'undici';
import { startPostgresServer, type PostgresServer } from '../../test/helpers/postgres-server.js';
import { buildCase, CASE_KINDS, type CaseContext, type CaseKind, type FuzzCase } from './fuzz-cases.js';
import { call, makeFixtures, principal } from './fuzz-fixtures.js';
import { openTrap, runProbes } from './fuzz-probes.js';
import { crashKey, Findings, printEngine, printSummary } from './fuzz-report.js';
import type { Engine, EngineReport, Resources, RunSettings } from './fuzz-report.js';
import { routesOf } from './fuzz-requests.js';
import { FuzzedService } from './fuzz-service.js';
import { sendCase, type Outcome } from './fuzz-wire.js';
import { positiveInteger } from './support.js';

declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:fuzz -- [options]

  --engine <e>           sqlite, postgres or both, one after the other            default both
  --requests <n>         cases sent per engine, at every route in turn            default 50000
  --concurrency <n>      cases in flight at once                                  default 32
  --seed <n>             the cases: the same seed sends the same requests         default 1
  --idle-seconds <n>     idle after the load before file descriptors and RSS are read again   default 60
  --body-idle-seconds <n>  svc-api's --body-idle-seconds: what a slowloris case costs   default 2
  --only <i,j,…>         send only these cases (indexes from a report), print their bytes and outcome
  --kinds <list>         of the --requests cases, send only those of these kinds (${Object.keys(CASE_KINDS).join(', ')})
  --examples <n>         examples printed for each kind of finding                default 5
  --api <file>           the svc-api build                                        default bin/svc-api.js
`;

interface Options extends RunSettings {
  only: number[] | undefined;
  kinds: Set<CaseKind> | undefined;
  api: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      engine: { type: 'string', default: 'both' },
      requests: { type: 'string', default: '50000' },
      concurrency: { type: 'string', default: '32' },
      seed: { type: 'string', default: '1' },
      'idle-seconds': { type: 'string', default: '60' },
      'body-idle-seconds': { type: 'string', default: '2' },
      only: { type: 'string' },
      kinds: { type: 'string' },
      examples: { type: 'string', default: '5' },
      api: { type: 'string', default: join(REPO_ROOT, 'bin/svc-api.js') },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  if (!['sqlite', 'postgres', 'both'].includes(values.engine)) throw new Error(`--engine: sqlite, postgres or both, not ${values.engine}`);
  if (!/^\d+$/.test(values.seed) || Number(values.seed) > 0xffffffff) throw new Error(`--seed: a whole number from 0 to ${0xffffffff}`);
  if (!/^\d+$/.test(values['idle-seconds'])) throw new Error(`--idle-seconds: whole seconds, not ${values['idle-seconds']}`);
  const kindOf = (kind: string): CaseKind => {
    if (!(kind in CASE_KINDS)) throw new Error(`--kinds: no kind ${kind} (${Object.keys(CASE_KINDS).join(', ')})`);
    return kind as CaseKind;
  };
  const options: Options = {
    requests: positiveInteger(values.requests, '--requests'),
    concurrency: positiveInteger(values.concurrency, '--concurrency'),
    seed: Number(values.seed),
    idleSeconds: Number(values['idle-seconds']),
    bodyIdleSeconds: positiveInteger(values['body-idle-seconds'], '--body-idle-seconds'),
    only: values.only?.split(',').map((each) => {
      if (!/^\d+$/.test(each.trim())) throw new Error(`--only takes case indexes, got ${each}`);
      return Number(each);
    }),
    kinds: values.kinds === undefined ? undefined : new Set(values.kinds.split(',').map(kindOf)),
    examples: positiveInteger(values.examples, '--examples'),
    api: values.api,
  };
  // The setup's fetches keep no connection past a second idle (a server's keep-alive hint would hold them 72 s): the
  // descriptors read before the load are svc-api's own, not the setup's sockets.
  setGlobalDispatcher(new Agent({ keepAliveTimeout: 1000, keepAliveMaxTimeout: 1000 }));
  const engines: Engine[] = values.engine === 'both' ? ['sqlite', 'postgres'] : [values.engine as Engine];
  const reports: EngineReport[] = [];
  for (const engine of engines) {
    const report = await fuzzEngine(engine, options);
    if (report !== undefined) {
      printEngine(report, options);
      reports.push(report);
    }
  }
  if (reports.length > 0) printSummary(reports, options);
}

/** The secrets svc-api is given, from the seed: the bench signs tokens and payment webhooks of its own with them. */
function keysOf(seed: number): { jwtSecret: string; jwtKey: Buffer; webhookSecret: string } {
  const jwtKey = createHash('sha256').update(`svc-fuzz-jwt:${seed}`).digest();
  const webhookSecret = `whsec_fuzz_${createHash('sha256').update(`svc-fuzz-webhook:${seed}`).digest('hex').slice(0, 32)}`;
  return { jwtSecret: jwtKey.toString('base64url'), jwtKey, webhookSecret };
}

async function fuzzEngine(engine: Engine, options: Options): Promise<EngineReport | undefined> {
  const began = Date.now();
  const scratch = mkdtempSync(join(tmpdir(), `svc-bench-fuzz-${engine}-`));
  const keys = keysOf(options.seed);
  const trap = await openTrap();
  let postgres: PostgresServer | undefined;
  let service: FuzzedService | undefined;
  try {
    // Nothing of this shell's svc-api settings: no SMTP relay (the sandbox keeps its mail), no database of its own.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SVC_')));
    Object.assign(env, { SVC_LOG_LEVEL: 'info', SVC_JWT_SECRET: keys.jwtSecret, SVC_WEBHOOK_SECRET: keys.webhookSecret });
    if (engine === 'postgres') {
      postgres = await startPostgresServer();
      env.SVC_DATABASE_URL = await postgres.createDatabase('svc_fuzz');
    }
    // The per-address budgets off (every case comes from 127.0.0.1: with them the auth routes would answer 429 and
    // nothing deeper); the body timer short so a slowloris case costs seconds; execute's wait short.
    const args = [
      '--port',
      '0',
      '--data-dir',
      join(scratch, 'api'),
      '--sandbox',
      '--body-idle-seconds',
      String(options.bodyIdleSeconds),
      '--execute-wait-seconds',
      '1',
      '--shutdown-grace',
      '1',
      '--rate-limit',
      '1000000',
      '--max-connections-per-address',
      '0',
      '--sign-in-codes-per-client',
      '1000000',
    ];
    const live = new FuzzedService(options.api, args, env, options.bodyIdleSeconds * 1000 + 3000);
    service = live;
    await live.start();
    process.stderr.write(`${engine}: svc-api on ${live.origin}; setting up users, a node, runs…\n`);
    const document = (await (await fetch(`${live.origin}/openapi.json`)).json()) as Parameters<typeof routesOf>[0];
    const routes = routesOf(document);
    const fx = await makeFixtures(live.origin, { jwtKey: keys.jwtKey, webhookSecret: keys.webhookSecret, trapPort: trap.port });
    const bodyIdleMs = options.bodyIdleSeconds * 1000;
    const context = (): CaseContext => ({ seed: options.seed, routes, fx, host: `127.0.0.1:${live.port}`, bodyIdleMs });

    if (options.only !== undefined) {
      await replay(engine, live, context, options);
      return undefined;
    }
    process.stderr.write(`${engine}: probes (webhook guard, counted limits, cross-site console)…\n`);
    const prober = await principal(live.origin, 'fuzz-probe@example.com');
    const probes = await runProbes(live.origin, prober, trap.port);
    const before = await settled(live);
    const firstGeneration = live.generation;
    const plan = `${options.requests} cases from seed ${options.seed}, ${options.concurrency} at once`;
    process.stderr.write(`${engine}: ${routes.length} routes; ${plan}\n`);
    const loadBegan = Date.now();
    const report = await load(engine, live, context, options);
    process.stderr.write(`${engine}: load done in ${((Date.now() - loadBegan) / 1000).toFixed(0)} s; idle ${options.idleSeconds} s\n`);
    await sleep(options.idleSeconds * 1000);
    await live.up;
    const after = live.resources();
    const restarted = live.generation !== firstGeneration;
    // What the service recorded of the deliveries to the probe's endpoint on the trap (named localhost).
    const path = `/v1/swarm/webhooks/${probes.trapEndpointId}/deliveries?limit=100`;
    const deliveries = await call(live.origin, 'GET', path, { bearer: prober.token });
    const attempts = (deliveries.body.deliveries ?? []) as { status: string; last_error: string | null }[];
    const recorded =
      deliveries.status !== 200
        ? [`GET its deliveries answered ${deliveries.status} ${String(deliveries.body.code)}`]
        : [...new Set(attempts.map((each) => `${each.status}: ${each.last_error ?? 'no error'}`))];
    const exits = [...live.exits];
    const culprits = await confirmExits(live, context, options, exits);
    const reached = new Set(report.reachedRoutes);
    return {
      engine,
      cases: report.sent,
      judged: report.judged,
      lostToExit: report.lostToExit,
      seconds: (Date.now() - began) / 1000,
      statuses: report.statuses,
      kinds: report.kinds,
      internal: report.internal,
      other5xx: report.other5xx,
      unavailable: report.unavailable,
      noAnswer: report.noAnswer,
      notCut: report.notCut,
      crossSite: report.crossSite,
      errorLines: live.errors.slice(0, 200),
      errorLineCount: live.errors.length,
      warnings: live.warnings,
      otherLines: live.otherLines,
      otherLineCount: live.otherLineCount,
      exits,
      culprits,
      before,
      peak: report.peak,
      after,
      restarted,
      routes: routes.length,
      reached: reached.size,
      notReached: routes.map((route) => `${route.method} ${route.path}`).filter((key) => !reached.has(key)),
      probes,
      trap: { sent: trap.deliveries(), hellos: trap.hellos(), connections: trap.connections(), recorded },
    };
  } finally {
    await service?.stop();
    await trap.close();
    postgres?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The service's figures once the setup's connections have closed: read every second until the open descriptors stay
 * the same three readings running, 30 s at most.
 */
async function settled(service: FuzzedService): Promise<Resources> {
  const readings: number[] = [];
  for (let i = 0; i < 30; i += 1) {
    await sleep(1000);
    readings.push(service.resources().fds);
    if (readings.length >= 3 && readings.slice(-3).every((fds) => fds === readings.at(-1))) break;
  }
  return service.resources();
}

/** What the load counts: the engine report's counts and findings (one list of them), and what only the load needs. */
type LoadReport = Pick<
  EngineReport,
  'judged' | 'lostToExit' | 'statuses' | 'kinds' | 'internal' | 'other5xx' | 'unavailable' | 'noAnswer' | 'notCut' | 'crossSite'
> & {
  /** Cases sent (fewer than --requests with --kinds). */
  sent: number;
  reachedRoutes: Set<string>;
  peak: Resources;
};

async function load(engine: Engine, service: FuzzedService, context: () => CaseContext, options: Options): Promise<LoadReport> {
  const keep = options.examples;
  const report: LoadReport = {
    sent: 0,
    judged: 0,
    lostToExit: 0,
    statuses: new Map(),
    kinds: new Map(),
    internal: new Findings(keep),
    other5xx: new Findings(keep),
    unavailable: new Findings(keep),
    noAnswer: new Findings(keep),
    notCut: new Findings(keep),
    crossSite: new Findings(keep),
    reachedRoutes: new Set(),
    peak: { fds: 0, rssMb: 0 },
  };
  const dispatcher = new Agent({ keepAliveTimeout: 2000, connections: options.concurrency });
  let next = 0;
  let done = 0;
  const sampler = setInterval(() => {
    try {
      const now = service.resources();
      report.peak = { fds: Math.max(report.peak.fds, now.fds), rssMb: Math.max(report.peak.rssMb, now.rssMb) };
    } catch {
      // Between an exit and the next start there is no process to read.
    }
  }, 1000);
  const progress = setInterval(() => {
    const found = `${report.internal.count} with a 500, ${service.errors.length} error lines, ${service.exits.length} exits`;
    process.stderr.write(`${engine}: ${done}/${options.requests} done, ${found}\n`);
  }, 15_000);
  const worker = async (): Promise<void> => {
    while (next < options.requests) {
      const index = next;
      next += 1;
      done += 1;
      if (options.kinds !== undefined && !options.kinds.has(buildCase(context(), index).kind)) continue;
      const { c, outcome, lost } = await attempt(service, context, index, dispatcher);
      report.sent += 1;
      judge(report, c, outcome, lost, options.bodyIdleSeconds * 1000);
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    await dispatcher.close();
  }
  return report;
}

/**
 * One case, sent again once svc-api is back when it was refused (svc-api down after an exit: nothing was sent). A case
 * svc-api exited under is lost, not judged, unless it was answered: an exit shows in the bench a little after the
 * sockets it reset, so a case that failed waits a moment before it is judged.
 */
async function attempt(
  service: FuzzedService,
  context: () => CaseContext,
  index: number,
  dispatcher: Agent,
): Promise<{ c: FuzzCase; outcome: Outcome; lost: boolean }> {
  for (let tries = 0; ; tries += 1) {
    await service.up;
    const exits = service.exits.length;
    const c = buildCase(context(), index);
    service.started(index, c.kind);
    const outcome = await sendCase(c, service.port, dispatcher);
    const failed = outcome.error !== undefined || outcome.statuses.length === 0;
    if (failed) await sleep(500);
    if (outcome.error === 'ECONNREFUSED' && tries < 5) {
      await sleep(200);
      continue;
    }
    return { c, outcome, lost: outcome.error === 'ECONNREFUSED' || (failed && service.exits.length !== exits) };
  }
}

function judge(report: LoadReport, c: FuzzCase, outcome: Outcome, lost: boolean, bodyIdleMs: number): void {
  report.kinds.set(c.kind, (report.kinds.get(c.kind) ?? 0) + 1);
  if (lost) {
    report.lostToExit += 1;
    return;
  }
  report.judged += 1;
  for (const status of outcome.statuses) report.statuses.set(status, (report.statuses.get(status) ?? 0) + 1);
  const statuses = outcome.statuses.join(',');
  if (outcome.statuses.some((status) => ![401, 403, 429].includes(status))) report.reachedRoutes.add(`${c.route.method} ${c.route.path}`);
  if (outcome.internal > 0) report.internal.add(c, `→ ${statuses} ${outcome.excerpt ?? ''}`);
  const fivexx = outcome.statuses.filter((status) => status >= 500).length;
  if (fivexx > outcome.internal + outcome.unavailable) report.other5xx.add(c, `→ ${statuses} ${outcome.excerpt ?? ''}`);
  if (outcome.unavailable > 0) report.unavailable.add(c, `→ ${statuses}`);
  if (c.answerDue && outcome.statuses.length === 0) {
    const error = outcome.error === undefined ? '' : ` (${outcome.error})`;
    report.noAnswer.add(c, outcome.timedOut ? `no answer in ${c.deadlineMs / 1000} s` : `closed without an answer${error}`);
  }
  // A stalled or trickling body must be cut off (408) by the body timer; an answer long after the timer would have
  // fired, not a 408, means the service waited the stall out.
  const late = outcome.firstAnswerMs !== undefined && outcome.firstAnswerMs > 2 * bodyIdleMs + 1000 && outcome.statuses[0] !== 408;
  if (c.cutDue && ((outcome.statuses.length === 0 && outcome.timedOut) || late)) {
    const after = ((outcome.firstAnswerMs ?? outcome.ms) / 1000).toFixed(1);
    report.notCut.add(c, late ? `answered ${statuses} after ${after} s, not cut off` : `held ${after} s, neither answered nor closed`);
  }
  if (c.crossSite && outcome.statuses.some((status) => status < 400)) report.crossSite.add(c, `→ ${statuses}`);
}

/**
 * For each kind of exit, the case that makes svc-api exit when sent alone: the case its last log line named, then
 * those begun just before it. Two exits of a kind are tried, four minutes at most in all (each try waits out the body
 * timer).
 */
async function confirmExits(
  service: FuzzedService,
  context: () => CaseContext,
  options: Options,
  exits: EngineReport['exits'],
): Promise<EngineReport['culprits']> {
  const culprits: EngineReport['culprits'] = new Map();
  const deadline = Date.now() + 240_000;
  const dispatcher = new Agent({ keepAliveTimeout: 1000 });
  for (const exit of exits) {
    const key = crashKey(exit);
    if (culprits.get(key) !== undefined || exits.filter((each) => crashKey(each) === key).indexOf(exit) >= 2) continue;
    culprits.set(key, undefined);
    // Raw cases first, newest first: an exit at once follows its case by moments, one by the body timer by seconds.
    const raw = exit.recent.filter((each) => !each.kind.startsWith('api')).map((each) => each.index);
    const candidates = [...new Set([...exit.lastLogged.slice(0, 1), ...raw, ...exit.recent.map((each) => each.index)])].slice(0, 16);
    for (const index of candidates) {
      if (Date.now() > deadline) break;
      await service.up;
      const before = service.exits.length;
      const c = buildCase(context(), index);
      await sendCase(c, service.port, dispatcher);
      await sleep(options.bodyIdleSeconds * 1000 + 2500);
      if (service.exits.length > before && crashKey(service.exits.at(-1)!) === key) {
        culprits.set(key, { index, kind: c.kind, method: c.method, target: c.target });
        break;
      }
    }
  }
  await dispatcher.close();
  return culprits;
}

/** `--only`: each case alone, its bytes shown, then what svc-api logged and whether it exited. */
async function replay(engine: Engine, service: FuzzedService, context: () => CaseContext, options: Options): Promise<void> {
  const dispatcher = new Agent({ keepAliveTimeout: 1000 });
  const shown = (bytes: Buffer): string => JSON.stringify(bytes.subarray(0, 1500).toString('latin1'));
  const write = (text: string): boolean => process.stdout.write(`${text}\n`);
  for (const index of options.only!) {
    await service.up;
    const c = buildCase(context(), index);
    const errorsBefore = service.errors.length;
    const exitsBefore = service.exits.length;
    write(`\n${engine} case ${index} (seed ${options.seed}): ${c.kind}, route ${c.route.method} ${c.route.path}`);
    if (c.http !== undefined) {
      write(`undici ${c.http.method} ${c.http.target}`);
      for (const [name, value] of c.http.headers) write(`  ${name}: ${value.slice(0, 200)}`);
      if (c.http.body !== undefined) write(`  body (${c.http.body.length} bytes): ${shown(c.http.body)}`);
    } else {
      for (const step of c.wire!.steps) write(`  after ${step.pauseMs} ms, ${step.bytes.length} bytes: ${shown(step.bytes)}`);
      write(`  then: ${c.wire!.end}`);
    }
    const outcome = await sendCase(c, service.port, dispatcher);
    write(`outcome: ${JSON.stringify(outcome)}`);
    await sleep(options.bodyIdleSeconds * 1000 + 3000);
    for (const line of service.errors.slice(errorsBefore)) write(`error line: ${line.msg} ${line.err ?? ''}`);
    for (const exit of service.exits.slice(exitsBefore)) write(`svc-api EXITED (${exit.signal ?? exit.code}): ${exit.crash}`);
    if (service.errors.length === errorsBefore && service.exits.length === exitsBefore) write('no error line, no exit');
  }
  await dispatcher.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:fuzz: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});

// svc-api's memory over a long steady load (docs/operations.md "Benchmarks"): warm-up or a leak? One svc-api process
// per engine (SQLite; PostgreSQL started for the bench), stand-in nodes that answer every run at once
// (./stand-in-node.ts, a process of their own) and executes at a fixed rate from a load generator in another
// (./soak-load.ts). Every interval the bench asks svc-api, over an IPC channel only it holds (./soak-probe.mjs,
// preloaded with --expose-gc: nothing is added to the service or its ports), for its memory before and after a full
// collection, and reads /proc for the resident set split into anonymous and file-backed pages. Then, per figure, it
// fits a line to the first half of the samples and one to the second: a figure that grew in the first half and is
// flat in the second was warm-up; one still growing in the second half is a leak, in MB an hour. Where the second
// half's line is too uncertain to tell (the 95% interval of its slope straddles the limit), it says so.
// Run with: npm run bench:soak -- [--engines sqlite,postgres] [--minutes 25] [--rate 10] [--snapshots <dir>]
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { findAgentSku } from '../../src/contract/agents.js';
import { startPostgresServer, type PostgresServer } from '../../test/helpers/postgres-server.js';
import type { SoakLoadCommand, SoakWindow } from './soak-load.js';
import type { StandInCommand } from './stand-in-node.js';
import { cpuMillisecondsOf, fundWallet, positiveInteger, signIn, table } from './support.js';

declare const SCRIPT_DIR: string;
declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:soak -- [options]

  --engines <list>        sqlite, postgres or both, one after the other        default sqlite,postgres
  --minutes <n>           how long the load runs on each engine                 default 25
  --rate <n>              executes a second (each a run, answered by a node)    default 10
  --users <n>             users the executes are spread over, each with a node  default 10
  --interval-seconds <n>  between two samples of svc-api's memory               default 30
  --limit-mb-per-hour <n> growth in the second half that counts as a leak: of the heap and
                          the other figures V8 counts                            default 1
  --rss-limit-mb-per-hour <n>  the same of the resident set, whose samples spread wider
                          (the allocator, SQLite's page cache)                   default 10
  --snapshots <dir>       write heap snapshots of svc-api there: at the half and at the end; compare them with
                          node scripts/bench/heap-diff.mjs (or Chrome DevTools' Memory tab, "Comparison").
                          A snapshot grows the resident set: RSS is then not judged
  --api <file>            the svc-api build                                      default bin/svc-api.js
`;

/** The figures sampled, in MB; the first is the one the verdict rests on (what a leak in JS code grows). */
const FIGURES = [
  ['heapAfterGc', 'V8 heap used after GC'],
  ['externalAfterGc', 'external after GC'],
  ['arrayBuffersAfterGc', 'arrayBuffers after GC'],
  ['rss', 'RSS'],
  ['rssAnon', 'RssAnon'],
  ['rssFile', 'RssFile'],
  ['malloced', 'V8 malloced'],
  ['database', 'database files'],
] as const;
type Figure = (typeof FIGURES)[number][0];

interface Sample extends Record<Figure, number> {
  /** Seconds since the load started. */
  at: number;
  heapBeforeGc: number;
  cpuMs: number;
  window: SoakWindow;
}

interface ProbeSample {
  before: NodeJS.MemoryUsage;
  after: NodeJS.MemoryUsage;
  mallocedBytes: number;
}

const MB = 1024 * 1024;
/** svc-api's SQLite page cache at most (SERVICE_CACHE_KIB, src/api/store/open-sqlite.ts). */
const SQLITE_CACHE_MB = 64;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      engines: { type: 'string', default: 'sqlite,postgres' },
      minutes: { type: 'string', default: '25' },
      rate: { type: 'string', default: '10' },
      users: { type: 'string', default: '10' },
      'interval-seconds': { type: 'string', default: '30' },
      'limit-mb-per-hour': { type: 'string', default: '1' },
      'rss-limit-mb-per-hour': { type: 'string', default: '10' },
      snapshots: { type: 'string' },
      api: { type: 'string', default: join(REPO_ROOT, 'bin/svc-api.js') },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  const options = {
    minutes: positiveInteger(values.minutes, '--minutes'),
    rate: positiveInteger(values.rate, '--rate'),
    users: positiveInteger(values.users, '--users'),
    intervalSeconds: positiveInteger(values['interval-seconds'], '--interval-seconds'),
    limit: Number(values['limit-mb-per-hour']),
    rssLimit: Number(values['rss-limit-mb-per-hour']),
    snapshots: values.snapshots,
    api: values.api,
  };
  if (!(options.limit > 0)) throw new Error(`--limit-mb-per-hour must be a positive number, got ${values['limit-mb-per-hour']}`);
  if (!(options.rssLimit > 0)) throw new Error(`--rss-limit-mb-per-hour must be a positive number, got ${values['rss-limit-mb-per-hour']}`);
  const engines = values.engines.split(',').map((engine) => engine.trim());
  for (const engine of engines)
    if (engine !== 'sqlite' && engine !== 'postgres') throw new Error(`--engines: no engine ${engine} (sqlite, postgres)`);
  let leaking = false;
  for (const engine of engines as ('sqlite' | 'postgres')[]) leaking = (await soak(engine, options)) || leaking;
  if (leaking) process.exitCode = 1;
}

type Options = {
  minutes: number;
  rate: number;
  users: number;
  intervalSeconds: number;
  limit: number;
  rssLimit: number;
  snapshots: string | undefined;
  api: string;
};

/** One engine's soak; true when a figure grew past the limit in the second half. */
async function soak(engine: 'sqlite' | 'postgres', options: Options): Promise<boolean> {
  const scratch = mkdtempSync(join(tmpdir(), `svc-bench-soak-${engine}-`));
  const children: ChildProcess[] = [];
  let postgres: PostgresServer | undefined;
  try {
    const env: Record<string, string> = {};
    if (engine === 'postgres') {
      postgres = await startPostgresServer({ durable: true });
      env.SVC_DATABASE_URL = await postgres.createDatabase('svc_soak');
    }
    const dataDir = join(scratch, 'api');
    const api = await startProbedApi(options.api, dataDir, env, children);
    const sku = findAgentSku('agent_ops_monitor_004')!;
    const perUser = Math.ceil((options.rate * options.minutes * 60 * 1.2) / options.users) + 10;
    const users: { token: string; body: string }[] = [];
    process.stderr.write(`${engine}: signing in ${options.users} users…\n`);
    for (let index = 0; index < options.users; index += 1) {
      const email = `soak-${randomUUID().slice(0, 8)}@example.com`;
      const token = await signIn(api.origin, email);
      await fundWallet(api.origin, email, token, sku.price_cents * perUser);
      users.push({ token, body: JSON.stringify({ user_id: email, agent_id: sku.agent_id }) });
    }
    const nodes = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'stand-in-node.ts')], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(nodes);
    // One poll held at a time per node, as a daemon holds it (20 s).
    await ask(nodes, {
      op: 'start',
      nodes: users.map(({ token }) => ({ api: api.origin, token })),
      agentId: sku.agent_id,
      capacity: 8,
      pollsAtOnce: 1,
      waitSeconds: 20,
    } satisfies StandInCommand);
    const load = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'soak-load.ts')], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(load);
    const databaseBytes = (): number =>
      engine === 'sqlite'
        ? ['svc-api.db', 'svc-api.db-wal']
            .map((name) => join(dataDir, name))
            .reduce((sum, file) => sum + (existsSync(file) ? statSync(file).size : 0), 0)
        : Number.NaN;

    const samples: Sample[] = [];
    const began = Date.now();
    const sample = async (): Promise<void> => {
      const window = (await ask(load, { op: 'window' } satisfies SoakLoadCommand)) as SoakWindow;
      const probe = (await ask(api.child, { op: 'sample' })) as ProbeSample;
      const status = readFileSync(`/proc/${api.child.pid}/status`, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) / 1024;
      samples.push({
        at: (Date.now() - began) / 1000,
        heapBeforeGc: probe.before.heapUsed / MB,
        heapAfterGc: probe.after.heapUsed / MB,
        externalAfterGc: probe.after.external / MB,
        arrayBuffersAfterGc: probe.after.arrayBuffers / MB,
        rss: kb('VmRSS'),
        rssAnon: kb('RssAnon'),
        rssFile: kb('RssFile'),
        malloced: probe.mallocedBytes / MB,
        database: databaseBytes() / MB,
        cpuMs: cpuMillisecondsOf(api.child.pid!),
        window,
      });
      const last = samples.at(-1)!;
      process.stderr.write(
        `${engine} ${(last.at / 60).toFixed(1)} min: heap ${last.heapAfterGc.toFixed(1)} MB after GC (${last.heapBeforeGc.toFixed(1)} before), ` +
          `RSS ${last.rss.toFixed(1)} MB (anon ${last.rssAnon.toFixed(1)}), external ${last.externalAfterGc.toFixed(1)} MB, ` +
          `${window.answered} runs p99 ${window.p99.toFixed(0)} ms ${JSON.stringify(window.statuses)}\n`,
      );
    };
    await ask(load, { op: 'start', origin: api.origin, users, perSecond: options.rate } satisfies SoakLoadCommand);
    process.stderr.write(`${engine}: ${options.rate} runs/s for ${options.minutes} min, a sample every ${options.intervalSeconds} s\n`);
    await sample();
    const end = began + options.minutes * 60_000;
    let halfSnapshot = options.snapshots === undefined;
    while (Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(options.intervalSeconds * 1000, Math.max(0, end - Date.now()))));
      await sample();
      if (!halfSnapshot && Date.now() - began >= (end - began) / 2) {
        halfSnapshot = true;
        await snapshot(api.child, options.snapshots!, `${engine}-half`);
      }
    }
    if (options.snapshots !== undefined) await snapshot(api.child, options.snapshots, `${engine}-end`);
    const totals = (await ask(load, { op: 'stop' } satisfies SoakLoadCommand)) as { answered: number; statuses: Record<string, number> };
    return judge(engine, samples, totals, options);
  } finally {
    for (const child of children.reverse()) await stop(child);
    postgres?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** svc-api with the probe preloaded and an IPC channel to it; resolves once it listens. */
async function startProbedApi(
  bin: string,
  dataDir: string,
  env: Record<string, string>,
  children: ChildProcess[],
): Promise<{ origin: string; child: ChildProcess }> {
  const probe = pathToFileURL(join(SCRIPT_DIR, 'soak-probe.mjs')).href;
  const args = [
    '--expose-gc',
    '--import',
    probe,
    bin,
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--sandbox',
    '--max-connections-per-address',
    '4096',
  ];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, SVC_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  children.push(child);
  const origin = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      seen += chunk;
      const match = /svc-api listening on (\S+)/.exec(seen);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`svc-api exited with ${code} before it was ready`)));
  });
  return { origin, child };
}

/** One command over IPC, answered by the child's next message. */
function ask(child: ChildProcess, command: object): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const gone = (): void => reject(new Error('the process exited before it answered'));
    child.once('exit', gone);
    child.once('message', (answer: { ok?: boolean; error?: string }) => {
      child.off('exit', gone);
      if (answer.ok === false) reject(new Error(answer.error));
      else resolve(answer);
    });
    child.send(command);
  });
}

async function snapshot(api: ChildProcess, dir: string, name: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const answer = (await ask(api, { op: 'snapshot', file: join(dir, `${name}.heapsnapshot`) })) as { file: string };
  process.stderr.write(`heap snapshot: ${answer.file}\n`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const forced = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return exited.finally(() => clearTimeout(forced));
}

/** The least-squares line through (hours, MB): its slope in MB an hour and that slope's standard error. */
function slopeOf(points: { x: number; y: number }[]): { slope: number; error: number } {
  const n = points.length;
  const meanX = points.reduce((sum, point) => sum + point.x, 0) / n;
  const meanY = points.reduce((sum, point) => sum + point.y, 0) / n;
  const sxx = points.reduce((sum, point) => sum + (point.x - meanX) ** 2, 0);
  const slope = points.reduce((sum, point) => sum + (point.x - meanX) * (point.y - meanY), 0) / sxx;
  const residuals = points.reduce((sum, point) => sum + (point.y - meanY - slope * (point.x - meanX)) ** 2, 0);
  return { slope, error: n > 2 ? Math.sqrt(residuals / (n - 2) / sxx) : Number.POSITIVE_INFINITY };
}

type Verdict = 'flat' | 'growing' | 'too wide to judge' | 'at the limit';

/**
 * Growing when even the low end of the second half's 95% interval exceeds the limit; flat when its high end is below.
 * Otherwise the interval straddles the limit: too wide to judge when it spans half the limit or more (rerun longer,
 * or on a quieter machine), else the figure grows at about the limit (a longer soak or a lower limit tells).
 */
function verdictOf(second: { slope: number; error: number }, limit: number): Verdict {
  if (second.slope + 2 * second.error < limit) return 'flat';
  if (second.slope - 2 * second.error > limit) return 'growing';
  return 2 * second.error >= limit / 2 ? 'too wide to judge' : 'at the limit';
}

function judge(
  engine: string,
  samples: Sample[],
  totals: { answered: number; statuses: Record<string, number> },
  options: Options,
): boolean {
  const half = Math.floor(samples.length / 2);
  const first = samples.slice(0, half + 1);
  const second = samples.slice(half);
  const rows = [['figure (MB)', 'start', 'half', 'end', 'slope 1st half (MB/h)', 'slope 2nd half (MB/h)', '± 2 SE', 'verdict']];
  let leaking = false;
  for (const [key, label] of FIGURES) {
    if (samples.some((each) => Number.isNaN(each[key]))) continue;
    const fit = (part: Sample[]): { slope: number; error: number } => slopeOf(part.map((each) => ({ x: each.at / 3600, y: each[key] })));
    const early = fit(first);
    const late = fit(second);
    // The database's files grow with the runs kept: their size is printed to explain RSS, not judged as a leak. A heap
    // snapshot costs the process its own memory (about as much again as the heap, kept after), which the resident set
    // shows from then on.
    const resident = key.startsWith('rss');
    const disturbed = options.snapshots !== undefined && resident;
    let verdict: string =
      key === 'database'
        ? 'the runs kept'
        : disturbed
          ? 'not judged (snapshot)'
          : verdictOf(late, resident ? options.rssLimit : options.limit);
    // SQLite's page cache (open-sqlite.ts, 64 MiB) fills as the file grows: while the file was under that bound at the
    // half, the resident set may grow with it in the second half without a leak (the heap's verdict still stands).
    if (verdict === 'growing' && key.startsWith('rss') && samples[half]!.database < SQLITE_CACHE_MB)
      verdict = 'growing with the file (page cache)';
    if (verdict === 'growing') leaking = true;
    rows.push([
      label,
      samples[0]![key].toFixed(1),
      samples[half]![key].toFixed(1),
      samples.at(-1)![key].toFixed(1),
      early.slope.toFixed(1),
      late.slope.toFixed(1),
      (2 * late.error).toFixed(1),
      verdict,
    ]);
  }
  const cpuSeconds = (samples.at(-1)!.cpuMs - samples[0]!.cpuMs) / 1000;
  const elapsed = samples.at(-1)!.at - samples[0]!.at;
  const p99s = samples.filter((each) => each.window.answered > 0).map((each) => each.window.p99);
  const lost = totals.answered - (totals.statuses['200'] ?? 0);
  process.stdout.write(
    `\n${engine}: ${totals.answered} runs in ${(elapsed / 60).toFixed(1)} min (${(totals.answered / elapsed).toFixed(1)}/s), ` +
      `statuses ${JSON.stringify(totals.statuses)}; svc-api ${((cpuSeconds / elapsed) * 100).toFixed(0)}% of a core; ` +
      `p99 per ${options.intervalSeconds} s window: ${Math.min(...p99s).toFixed(0)}–${Math.max(...p99s).toFixed(0)} ms\n\n` +
      `${table(rows)}\n\n` +
      `${engine}: ${leaking ? 'LEAK: a figure still grows past its limit in the second half' : 'no leak found: nothing grows past its limit in the second half where it can be judged'} ` +
      `(${options.limit} MB/h; the resident set ${options.rssLimit} MB/h)` +
      `${lost > 0 ? `; ${lost} execute(s) not answered 200` : ''}\n`,
  );
  return leaking;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:soak: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});

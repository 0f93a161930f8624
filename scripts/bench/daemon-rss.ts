// Memory of the swarm-node daemon (docs/operations.md "Benchmarks"): its resident set at start-up, idle, and through
// 1,000 scheduled runs against the built svc-api (fresh data dir), with zero lost or duplicate charges checked at
// the end against the service's own ledger. Runs execute on the node
// (docs/decisions/0011-agents-run-on-the-node.md): this home is enrolled (its node credential), every catalog agent
// has an operator's no-op bundle here (prints {}), and each scheduled run goes through execute, is leased to this
// node and runs here. The daemon is the built binary with its real one-second tick; a user is signed in and funded
// through the real funnel, the agents registered with the CLI.
// Judged from repeated samples, never two points: idle is the median of one sample a second over each idle phase;
// peak is the kernel's high-water mark (VmHWM, which catches the start-up spike between samples) beside the largest
// sample; growth compares the medians of the first and last fifths of the second half of the runs, and fits a slope
// through every sample of that half. Goal: idle and peak at most 80 MB, no growth.
// Run with: npm run bench:daemon -- [--runs N] [--every S] [--agents N] [--idle-seconds S]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import { fundWallet, installNoopAgent, median, positiveInteger, signIn, startServer, swarmNode, table, until } from './support.js';

declare const REPO_ROOT: string;

/** A valid input for each catalog agent that needs one (agents/<id>/agent.json): paths only, never read. */
const BENCH_INPUTS: Record<string, string[]> = {
  agent_dev_review_012: ['repo=/srv/repo'],
  agent_research_rag_015: ['corpus=/srv/wiki', 'question=what is a node?'],
  agent_sales_outreach_008: ['leads=/srv/leads.csv', 'template=Hello {{name}}'],
  agent_svc_skills_005: ['question=what is a node?'],
};

/** The goal (docs/operations.md "Benchmarks"): idle and peak, the start-up spike counted. */
const GOAL_MB = 80;
/**
 * Under load V8 grows its young generation and defers major collections while the heap is small, so RSS rises by a
 * few MB over the first hundreds of runs and then levels off. Growth is judged over the second half of the runs
 * (warm from the start of it), where a per-run leak of even 5 KB would show as 2.5 MB.
 */
const GROWTH_TOLERANCE_MB = 2.5;
/**
 * The daemon collects its whole heap once a minute (src/node/daemon/memory.ts); before that first collection RSS
 * climbs by design. Growth is judged only over a second half that spans two collections or more.
 */
const GROWTH_MIN_SECONDS = 120;
/** Busy samples a second: enough for medians of windows over a few minutes of runs. */
const BUSY_SAMPLE_MS = 500;
/** Start-up is sampled this often until the daemon is ready: the spike lasts well under a second. */
const STARTUP_SAMPLE_MS = 25;

const USAGE = `Usage: npm run bench:daemon -- [options]

  --runs <n>           scheduled runs to wait for                     default 1000
                       (growth is judged only when the second half takes 2 min or more)
  --every <s>          each agent's interval, seconds                 default 1
  --agents <n>         agents registered (1 to ${AGENT_SKUS.length})                    default ${AGENT_SKUS.length}
  --idle-seconds <s>   how long each idle phase is sampled            default 10
  --daemon-log <file>  write the daemon's stdout there
  --node-flags=<f>     flags for the daemon's node, space-separated (e.g. --node-flags=--trace-gc)
  --concurrency <n>    the daemon's concurrency (SWARM_NODE_CONCURRENCY)  default the node's own (2)
  --keep               keep the temporary directories
`;

interface Sample {
  atMs: number;
  runs: number;
  rssKb: number;
  /** The process's own memory; the rest of RSS is file-backed: the node binary and libraries, shared with others. */
  anonKb: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '1000' },
      every: { type: 'string', default: '1' },
      agents: { type: 'string', default: String(AGENT_SKUS.length) },
      'idle-seconds': { type: 'string', default: '10' },
      'daemon-log': { type: 'string' },
      'node-flags': { type: 'string' },
      concurrency: { type: 'string' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const runs = positiveInteger(values.runs, '--runs');
  const every = positiveInteger(values.every, '--every');
  const agentCount = Math.min(positiveInteger(values.agents, '--agents'), AGENT_SKUS.length);
  const idleSeconds = positiveInteger(values['idle-seconds'], '--idle-seconds');
  const agents = AGENT_SKUS.slice(0, agentCount);
  const concurrency = values.concurrency === undefined ? undefined : positiveInteger(values.concurrency, '--concurrency');

  const scratch = mkdtempSync(join(tmpdir(), 'bench-daemon-'));
  const children: ChildProcess[] = [];
  const stopAll = (): void => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', stopAll);
  try {
    const dataDir = join(scratch, 'svc-api');
    const api = await startServer(
      [join(REPO_ROOT, 'bin', 'svc-api.js'), '--port', '0', '--data-dir', dataDir, '--sandbox', '--max-connections-per-address', '1024'],
      { SVC_LOG_LEVEL: 'silent' },
      /svc-api listening on (\S+)/,
      children,
    );
    const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
    const token = await signIn(api, email);
    const maxPrice = Math.max(...agents.map((agent) => agent.price_cents));
    await fundWallet(api, email, token, (runs + 100) * maxPrice);

    const home = join(scratch, 'node');
    // The runs' own users (isolation uid, as root) could not enter a home under mkdtemp's 0700 directory; the
    // daemon's memory does not depend on which user its agents run as.
    const env = {
      ...process.env,
      SWARM_NODE_HOME: home,
      SVC_BASE_URL: api,
      NO_COLOR: '1',
      SWARM_AGENT_ISOLATION: 'none',
      ...(concurrency === undefined ? {} : { SWARM_NODE_CONCURRENCY: String(concurrency) }),
    };
    swarmNode(['login', '--token-stdin'], env, `${token}\n`);
    swarmNode(['enroll'], env);
    for (const agent of agents) installNoopAgent(home, agent.agent_id);

    // The daemon with nothing to do yet: its idle resident set.
    const nodeFlags = values['node-flags']?.split(' ').filter((flag) => flag !== '') ?? [];
    const daemon = spawn(process.execPath, [...nodeFlags, join(REPO_ROOT, 'bin', 'swarm-node.js'), 'daemon'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(daemon);
    let succeeded = 0;
    let tokenLogged = false;
    let logTail = '';
    const eventCounts = new Map<string, number>();
    const daemonLog = values['daemon-log'] === undefined ? undefined : createWriteStream(values['daemon-log']);
    daemon.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      daemonLog?.write(chunk);
      const text = logTail + chunk;
      const lines = text.split('\n');
      logTail = lines.pop()!;
      for (const line of lines) {
        if (line.includes(token)) tokenLogged = true;
        const event = /event=(\S+)/.exec(line)?.[1] ?? 'unknown';
        eventCounts.set(event, (eventCounts.get(event) ?? 0) + 1);
        if (event === 'run_succeeded') succeeded += 1;
      }
    });
    // Start-up, sampled closely until the service has heard which agents this node serves (nothing yet).
    const startup: Sample[] = [];
    await until(
      async () => {
        if (daemon.exitCode !== null) throw new Error(`the daemon exited ${daemon.exitCode} while starting`);
        const point = sample(daemon.pid!, 0);
        // Before exec the new process has no resident set of its own yet.
        if (point.rssKb > 0) startup.push(point);
        return (eventCounts.get('agents_served') ?? 0) > 0;
      },
      'the daemon to start and tell the service what it serves',
      30_000,
      STARTUP_SAMPLE_MS,
    );
    const startupPeakKb = vmField(daemon.pid!, 'VmHWM');
    process.stdout.write(
      `daemon pid ${daemon.pid}: ready (start-up high-water mark ${mb(startupPeakKb)} MB); idle, sampling ${idleSeconds} s…\n`,
    );
    const idleBefore = await sampleFor(daemon.pid!, idleSeconds, () => succeeded);

    // The service checks each run's input against the agent's schema before it charges (docs/api.md), so an agent
    // that needs input is registered with a default one; the no-op bundles ignore it.
    for (const agent of agents) {
      const input = (BENCH_INPUTS[agent.agent_id] ?? []).flatMap((pair) => ['--input', pair]);
      swarmNode(['register', agent.agent_id, '--every', `${every}s`, ...input], env);
    }
    process.stdout.write(
      `${agents.length} agents every ${every}s: waiting for ${runs} runs (about ${Math.ceil((runs * every) / agents.length)} s)…\n`,
    );
    const busy: Sample[] = [];
    const started = Date.now();
    await until(
      async () => {
        busy.push(sample(daemon.pid!, succeeded));
        if (busy.length % 60 === 0) process.stdout.write(`  ${succeeded} runs, RSS ${mb(busy.at(-1)!.rssKb)} MB\n`);
        return succeeded >= runs;
      },
      `${runs} runs`,
      ((runs * every) / agents.length) * 1000 * 3 + 60_000,
      BUSY_SAMPLE_MS,
    );
    const busySeconds = (Date.now() - started) / 1000;

    // Nothing left to run: unregistered, the last runs answered. Idle again.
    for (const agent of agents) swarmNode(['unregister', agent.agent_id], env);
    await until(async () => pendingCount(join(home, 'var', 'swarm-node.db')) === 0, 'the last runs to settle', 30_000);
    process.stdout.write(`idle again, sampling ${idleSeconds} s…\n`);
    const idleAfter = await sampleFor(daemon.pid!, idleSeconds, () => succeeded);
    const peakKb = vmField(daemon.pid!, 'VmHWM');

    daemon.kill('SIGTERM');
    const exitCode = await new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));

    const ledger = checkLedger(join(dataDir, 'svc-api.db'), join(home, 'var', 'swarm-node.db'), email);
    const growth = judgeGrowth(busy, runs);
    const idleBeforeKb = median(idleBefore.map((point) => point.rssKb));
    const idleAfterKb = median(idleAfter.map((point) => point.rssKb));
    const all = [...startup, ...idleBefore, ...busy, ...idleAfter];
    const largest = all.reduce((top, point) => (point.rssKb > top.rssKb ? point : top));
    const spread = (points: Sample[]): string =>
      `${mb(Math.min(...points.map((p) => p.rssKb)))}–${mb(Math.max(...points.map((p) => p.rssKb)))}`;
    const rows = [
      ['phase', 'samples', 'runs', 'RSS MB (median)', 'min–max', 'anon MB (median)'],
      [
        'start-up, until ready',
        String(startup.length),
        '0',
        mb(median(startup.map((p) => p.rssKb))),
        spread(startup),
        mb(median(startup.map((p) => p.anonKb))),
      ],
      [
        'idle, nothing registered',
        String(idleBefore.length),
        '0',
        mb(idleBeforeKb),
        spread(idleBefore),
        mb(median(idleBefore.map((p) => p.anonKb))),
      ],
      ...growth.windows.map((window) => [
        `busy, runs ${window.fromRuns}–${window.toRuns}`,
        String(window.samples.length),
        String(window.toRuns),
        mb(window.medianKb),
        spread(window.samples),
        mb(median(window.samples.map((p) => p.anonKb))),
      ]),
      [
        'idle, after the runs',
        String(idleAfter.length),
        String(succeeded),
        mb(idleAfterKb),
        spread(idleAfter),
        mb(median(idleAfter.map((p) => p.anonKb))),
      ],
      ['largest sample', '1', String(largest.runs), mb(largest.rssKb), '', mb(largest.anonKb)],
      ['peak (VmHWM, start-up counted)', '', '', mb(peakKb), `at ready ${mb(startupPeakKb)}`, ''],
    ];
    process.stdout.write(`\n${table(rows)}\n\n`);
    process.stdout.write(
      `runs: ${succeeded} in ${busySeconds.toFixed(0)} s (${(succeeded / busySeconds).toFixed(2)}/s); daemon events: ${[...eventCounts].map(([name, count]) => `${name}=${count}`).join(' ')}\n`,
    );
    process.stdout.write(
      `ledger: service charged ${ledger.serviceCents} cents for ${ledger.serviceRuns} runs; node journaled ${ledger.localCents} cents for ${ledger.localRuns} runs; ` +
        `pending ${ledger.pending}; lost ${ledger.lost}, duplicated ${ledger.duplicated}\n`,
    );
    const idleOk = idleBeforeKb / 1024 <= GOAL_MB && idleAfterKb / 1024 <= GOAL_MB;
    const peakOk = peakKb / 1024 <= GOAL_MB;
    const idleGrowthMb = (idleAfterKb - idleBeforeKb) / 1024;
    const growthJudged = growth.seconds >= GROWTH_MIN_SECONDS;
    const noGrowth = !growthJudged || growth.growthMb <= GROWTH_TOLERANCE_MB;
    if (tokenLogged) process.stdout.write('the daemon logged the JWT\n');
    const ledgerOk =
      !tokenLogged && ledger.lost === 0 && ledger.duplicated === 0 && ledger.pending === 0 && ledger.serviceCents === ledger.localCents;
    process.stdout.write(
      `growth over the second half (${growth.samples} samples, ${growth.seconds.toFixed(0)} s): last fifth's median minus first fifth's ${growth.growthMb.toFixed(1)} MB, ` +
        `fitted slope ${growth.slopeMbPer1000.toFixed(2)} MB per 1,000 runs; idle after vs before ${idleGrowthMb.toFixed(1)} MB\n`,
    );
    process.stdout.write(
      `goal idle ≤ ${GOAL_MB} MB: ${idleOk ? 'met' : 'MISSED'}; peak ≤ ${GOAL_MB} MB: ${peakOk ? 'met' : 'MISSED'} (${mb(peakKb)} MB); ` +
        `${!growthJudged ? `growth NOT JUDGED (the second half took under ${GROWTH_MIN_SECONDS} s: more --runs)` : noGrowth ? 'no growth' : 'GROWTH'} (tolerance ${GROWTH_TOLERANCE_MB} MB); charges ${ledgerOk ? 'exact' : 'WRONG'}; daemon exit ${exitCode}\n`,
    );
    if (!idleOk || !peakOk || !noGrowth || !ledgerOk || exitCode !== 0) process.exitCode = 1;
  } finally {
    stopAll();
    if (!values.keep) rmSync(scratch, { recursive: true, force: true });
    else process.stdout.write(`kept ${scratch}\n`);
  }
}

function vmField(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no ${field} for pid ${pid}`);
  return Number(match[1]);
}

function sample(pid: number, runs: number): Sample {
  return { atMs: Date.now(), runs, rssKb: vmField(pid, 'VmRSS'), anonKb: vmField(pid, 'RssAnon') };
}

async function sampleFor(pid: number, seconds: number, runs: () => number): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (let i = 0; i < seconds; i += 1) {
    samples.push(sample(pid, runs()));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return samples;
}

function pendingCount(nodeDbFile: string): number {
  const db = new Database(nodeDbFile, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM runs WHERE status = 'pending'`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** What the service charged (debits minus refunds) against what the node journaled, run by run. */
function checkLedger(serviceDbFile: string, nodeDbFile: string, email: string) {
  const service = new Database(serviceDbFile, { readonly: true, fileMustExist: true });
  const node = new Database(nodeDbFile, { readonly: true, fileMustExist: true });
  try {
    const serviceCents = (
      service
        .prepare(
          `SELECT COALESCE(SUM(CASE kind WHEN 'debit' THEN amount_cents ELSE -amount_cents END), 0) AS cents FROM ledger_entries WHERE user_id = ? AND kind IN ('debit', 'refund')`,
        )
        .get(email) as { cents: number }
    ).cents;
    const serviceRunIds = new Set(
      (service.prepare('SELECT run_id FROM runs WHERE user_id = ?').all(email) as { run_id: string }[]).map((row) => row.run_id),
    );
    const local = node.prepare('SELECT run_id, charged_cents, status FROM runs').all() as {
      run_id: string | null;
      charged_cents: number;
      status: string;
    }[];
    const localRunIds = local.map((row) => row.run_id).filter((id): id is string => id !== null);
    const seen = new Set<string>();
    let duplicated = 0;
    for (const id of localRunIds) {
      if (seen.has(id)) duplicated += 1;
      seen.add(id);
    }
    return {
      serviceCents,
      serviceRuns: serviceRunIds.size,
      localCents: local.reduce((sum, row) => sum + row.charged_cents, 0),
      localRuns: localRunIds.length,
      pending: local.filter((row) => row.status === 'pending').length,
      /** Charged by the service, unknown to the node. */
      lost: [...serviceRunIds].filter((id) => !seen.has(id)).length + [...seen].filter((id) => !serviceRunIds.has(id)).length,
      duplicated,
    };
  } finally {
    service.close();
    node.close();
  }
}

interface Window {
  fromRuns: number;
  toRuns: number;
  samples: Sample[];
  medianKb: number;
}

/**
 * Growth over the second half of the runs, from every sample taken there: split by run count into five windows,
 * the last window's median minus the first's (a full collection a minute makes a sawtooth that a median rides
 * over), and the least-squares slope of RSS against runs.
 */
function judgeGrowth(
  busy: Sample[],
  runs: number,
): { windows: Window[]; growthMb: number; slopeMbPer1000: number; samples: number; seconds: number } {
  const half = busy.filter((point) => point.runs >= runs / 2);
  const windows: Window[] = [];
  const fifth = runs / 2 / 5;
  for (let i = 0; i < 5; i += 1) {
    const fromRuns = Math.round(runs / 2 + i * fifth);
    const toRuns = i === 4 ? Number.POSITIVE_INFINITY : Math.round(runs / 2 + (i + 1) * fifth);
    const samples = half.filter((point) => point.runs >= fromRuns && point.runs < toRuns);
    if (samples.length > 0)
      windows.push({ fromRuns, toRuns: Math.max(...samples.map((p) => p.runs)), samples, medianKb: median(samples.map((p) => p.rssKb)) });
  }
  const n = half.length;
  const meanX = half.reduce((sum, p) => sum + p.runs, 0) / n;
  const meanY = half.reduce((sum, p) => sum + p.rssKb, 0) / n;
  const sxx = half.reduce((sum, p) => sum + (p.runs - meanX) ** 2, 0);
  const sxy = half.reduce((sum, p) => sum + (p.runs - meanX) * (p.rssKb - meanY), 0);
  const slopeKbPerRun = sxx === 0 ? 0 : sxy / sxx;
  const growthKb = windows.length < 2 ? 0 : windows.at(-1)!.medianKb - windows[0]!.medianKb;
  const seconds = n < 2 ? 0 : (half.at(-1)!.atMs - half[0]!.atMs) / 1000;
  return { windows, growthMb: growthKb / 1024, slopeMbPer1000: (slopeKbPerRun * 1000) / 1024, samples: n, seconds };
}

function mb(kb: number): string {
  return (kb / 1024).toFixed(1);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:daemon: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

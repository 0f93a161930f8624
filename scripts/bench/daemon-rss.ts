// Memory of the swarm-node daemon (issue 6 §5): its resident set idle, and after 1,000 scheduled runs against the
// built svc-api (sandbox runtime, fresh data dir), with zero lost or duplicate charges checked at the end against
// the service's own ledger. The daemon is the built binary with its real one-second tick; a user is signed in and
// funded through the real funnel, the agents registered with the CLI. Goal: idle at most 80 MB, no growth.
// Run with: npm run bench:daemon -- [--runs N] [--every S] [--agents N] [--idle-seconds S]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { AGENT_SKUS } from '../../src/contract/agents.js';
import { fundWallet, positiveInteger, signIn, startServer, table, until } from './support.js';

declare const REPO_ROOT: string;

const GOAL_IDLE_MB = 80;
/**
 * Under load V8 grows its young generation and defers major collections while the heap is small, so RSS rises by a
 * few MB over the first hundreds of runs and then levels off. Growth is judged over the second half of the runs
 * (warm from the start of it), where a per-run leak of even 5 KB would show as 2.5 MB.
 */
const GROWTH_TOLERANCE_MB = 2.5;

const USAGE = `Usage: npm run bench:daemon -- [options]

  --runs <n>           scheduled runs to wait for                     default 1000
  --every <s>          each agent's interval, seconds                 default 1
  --agents <n>         agents registered (1 to ${AGENT_SKUS.length})                    default ${AGENT_SKUS.length}
  --idle-seconds <s>   how long each idle phase is sampled            default 10
  --daemon-log <file>  write the daemon's stdout there
  --node-flags <f>     flags for the daemon's node, space-separated (e.g. --trace-gc)
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

  const scratch = mkdtempSync(join(tmpdir(), 'bench-daemon-'));
  const children: ChildProcess[] = [];
  const stopAll = (): void => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', stopAll);
  try {
    const dataDir = join(scratch, 'svc-api');
    const api = await startServer([join(REPO_ROOT, 'bin', 'svc-api.js'), '--port', '0', '--data-dir', dataDir, '--sandbox'], { SVC_LOG_LEVEL: 'silent' }, /svc-api listening on (\S+)/, children);
    const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
    const token = await signIn(api, email);
    const maxPrice = Math.max(...agents.map((agent) => agent.price_cents));
    await fundWallet(api, email, token, (runs + 100) * maxPrice);

    const home = join(scratch, 'node');
    const env = { ...process.env, SWARM_NODE_HOME: home, SVC_BASE_URL: api, NO_COLOR: '1' };
    swarmNode(['login', '--token-stdin'], env, `${token}\n`);

    // The daemon with nothing to do yet: its idle resident set.
    const nodeFlags = values['node-flags']?.split(' ').filter((flag) => flag !== '') ?? [];
    const daemon = spawn(process.execPath, [...nodeFlags, join(REPO_ROOT, 'bin', 'swarm-node.js'), 'daemon'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
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
    await until(async () => (eventCounts.get('service_ready') ?? 0) > 0, 'the daemon to start', 15_000);
    process.stdout.write(`daemon pid ${daemon.pid}: idle, sampling ${idleSeconds} s…\n`);
    const idleBefore = await sampleFor(daemon.pid!, idleSeconds, () => succeeded);

    for (const agent of agents) swarmNode(['register', agent.agent_id, '--every', `${every}s`], env);
    process.stdout.write(`${agents.length} agents every ${every}s: waiting for ${runs} runs (about ${Math.ceil((runs * every) / agents.length)} s)…\n`);
    const busy: Sample[] = [];
    const started = Date.now();
    await until(
      async () => {
        busy.push(sample(daemon.pid!, succeeded));
        if (busy.length % 30 === 0) process.stdout.write(`  ${succeeded} runs, RSS ${mb(busy.at(-1)!.rssKb)} MB\n`);
        return succeeded >= runs;
      },
      `${runs} runs`,
      ((runs * every) / agents.length) * 1000 * 3 + 60_000,
      1_000,
    );
    const busySeconds = (Date.now() - started) / 1000;
    const afterRuns = sample(daemon.pid!, succeeded);

    // Nothing left to run: unregistered, the last runs answered. Idle again.
    for (const agent of agents) swarmNode(['unregister', agent.agent_id], env);
    await until(async () => pendingCount(join(home, 'var', 'swarm-node.db')) === 0, 'the last runs to settle', 30_000);
    process.stdout.write(`idle again, sampling ${idleSeconds} s…\n`);
    const idleAfter = await sampleFor(daemon.pid!, idleSeconds, () => succeeded);
    const peakKb = vmField(daemon.pid!, 'VmHWM');

    daemon.kill('SIGTERM');
    const exitCode = await new Promise<number | null>((resolve) => daemon.once('exit', (code) => resolve(code)));

    const ledger = checkLedger(join(dataDir, 'svc-api.db'), join(home, 'var', 'swarm-node.db'), email);
    const early = busy.find((point) => point.runs >= Math.min(100, runs / 10)) ?? busy[0]!;
    const halfway = busy.find((point) => point.runs >= runs / 2) ?? busy[0]!;
    const idleBeforeKb = median(idleBefore.map((point) => point.rssKb));
    const idleAfterKb = median(idleAfter.map((point) => point.rssKb));
    const idleBeforeAnonKb = median(idleBefore.map((point) => point.anonKb));
    const idleAfterAnonKb = median(idleAfter.map((point) => point.anonKb));
    const rows = [
      ['phase', 'runs', 'RSS MB', 'anon MB'],
      ['idle, nothing registered (median)', '0', mb(idleBeforeKb), mb(idleBeforeAnonKb)],
      [`busy, after ${early.runs} runs`, String(early.runs), mb(early.rssKb), mb(early.anonKb)],
      [`busy, after ${halfway.runs} runs`, String(halfway.runs), mb(halfway.rssKb), mb(halfway.anonKb)],
      [`busy, after ${afterRuns.runs} runs`, String(afterRuns.runs), mb(afterRuns.rssKb), mb(afterRuns.anonKb)],
      ['idle, after the runs (median)', String(succeeded), mb(idleAfterKb), mb(idleAfterAnonKb)],
      ['peak (VmHWM)', '', mb(peakKb), ''],
    ];
    process.stdout.write(`\n${table(rows)}\n\n`);
    process.stdout.write(`runs: ${succeeded} in ${busySeconds.toFixed(0)} s (${(succeeded / busySeconds).toFixed(2)}/s); daemon events: ${[...eventCounts].map(([name, count]) => `${name}=${count}`).join(' ')}\n`);
    process.stdout.write(
      `ledger: service charged ${ledger.serviceCents} cents for ${ledger.serviceRuns} runs; node journaled ${ledger.localCents} cents for ${ledger.localRuns} runs; ` +
        `pending ${ledger.pending}; lost ${ledger.lost}, duplicated ${ledger.duplicated}\n`,
    );
    const idleOk = idleBeforeKb / 1024 <= GOAL_IDLE_MB && idleAfterKb / 1024 <= GOAL_IDLE_MB;
    const growthMb = (afterRuns.rssKb - halfway.rssKb) / 1024;
    const idleGrowthMb = (idleAfterKb - idleBeforeKb) / 1024;
    const noGrowth = growthMb <= GROWTH_TOLERANCE_MB;
    if (tokenLogged) process.stdout.write('the daemon logged the JWT\n');
    const ledgerOk = !tokenLogged && ledger.lost === 0 && ledger.duplicated === 0 && ledger.pending === 0 && ledger.serviceCents === ledger.localCents;
    process.stdout.write(
      `goal idle ≤ ${GOAL_IDLE_MB} MB: ${idleOk ? 'met' : 'MISSED'}; growth from ${halfway.runs} to ${afterRuns.runs} runs ${growthMb.toFixed(1)} MB ` +
        `(idle after vs before ${idleGrowthMb.toFixed(1)} MB): ${noGrowth ? 'no growth' : 'GROWTH'}; charges ${ledgerOk ? 'exact' : 'WRONG'}; daemon exit ${exitCode}\n`,
    );
    if (!idleOk || !noGrowth || !ledgerOk || exitCode !== 0) process.exitCode = 1;
  } finally {
    stopAll();
    if (!values.keep) rmSync(scratch, { recursive: true, force: true });
    else process.stdout.write(`kept ${scratch}\n`);
  }
}

function swarmNode(args: string[], env: NodeJS.ProcessEnv, input?: string): void {
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), ...args], { env, input, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`swarm-node ${args[0]} exited ${result.status}: ${result.stderr}`);
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
        .prepare(`SELECT COALESCE(SUM(CASE kind WHEN 'debit' THEN amount_cents ELSE -amount_cents END), 0) AS cents FROM ledger_entries WHERE user_id = ? AND kind IN ('debit', 'refund')`)
        .get(email) as { cents: number }
    ).cents;
    const serviceRunIds = new Set((service.prepare('SELECT run_id FROM runs WHERE user_id = ?').all(email) as { run_id: string }[]).map((row) => row.run_id));
    const local = node.prepare('SELECT run_id, charged_cents, status FROM runs').all() as { run_id: string | null; charged_cents: number; status: string }[];
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function mb(kb: number): string {
  return (kb / 1024).toFixed(1);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:daemon: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

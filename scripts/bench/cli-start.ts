// How long a swarm-node command takes from start to exit, against its baseline measured in the same run
// (docs/operations.md "Benchmarks"):
// - `--help`, `--version` against `node -e 0`: goal at most 1.3x;
// - network commands (`wallet`, `docs <section>`, `run`) against `node -e 0`, with their peak RSS: goal at most 2.5x
//   start to exit; and their start, up to their first connection to the service, with the request and what follows
//   taken out: goal at most 1.5x. The service is reached through a proxy in this process that notes when each
//   command connects; a command runs alone, so its first connection is its own. The service's round trip (the
//   command's exit after that connection) is reported apart;
// - `runs` on a journal of 100k rows against `runs` on an empty one: goal at most 1.1x.
// Each round starts every command once, in an order that rotates from round to round, so that the machine's noise
// hits each alike; each ratio is taken within its round (paired), and the rounds' spread says whether the figures
// can be judged at all. The service runs as its own process, started once.
// Run with: npm run bench:cli-start -- [--rounds N] [--warmup N] [--journal-rows N]
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openNodeStore } from '../../src/node/store/database.js';
import {
  fundWallet,
  installNoopAgent,
  median,
  positiveInteger,
  signIn,
  spreadLine,
  spreadOf,
  SPREAD_LIMIT,
  startServer,
  swarmNode,
  table,
} from './support.js';

declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:cli-start -- [options]

  --rounds <n>         rounds, each starting every command once       default 15
  --warmup <n>         unmeasured rounds first                          default 2
  --journal-rows <n>   runs in the large journal                        default 100000
  --profile <dir>      after the rounds, start each command once more with --cpu-prof, its profile in
                       <dir>/<command>/ (open it in Chrome DevTools' Performance tab, or speedscope)
`;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '2' },
    'journal-rows': { type: 'string', default: '100000' },
    profile: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const rounds = positiveInteger(values.rounds, '--rounds');
const warmup = Number(values.warmup);
const journalRows = positiveInteger(values['journal-rows'], '--journal-rows');
const bin = join(REPO_ROOT, 'bin', 'swarm-node.js');
if (!existsSync(join(REPO_ROOT, 'dist', 'swarm-node.js'))) {
  process.stderr.write('dist/swarm-node.js is missing: run npm run build first (npm run bench:cli-start does).\n');
  process.exit(1);
}

interface Case {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

interface Sample {
  ms: number;
  peakKb: number;
  /** From the start to its first connection to the service; undefined for a command that makes none. */
  toConnectMs?: number;
}

/** When the command running now first connected to the service (process.hrtime), set by the proxy. */
let firstConnect: bigint | undefined;

/**
 * A preload every measured command gets (the baseline too, so it costs each alike): at exit it writes the process's
 * peak resident set (ru_maxrss) to the file its environment names. Node reports no child's rusage.
 */
const PEAK_HOOK = `import { writeFileSync } from 'node:fs';
process.on('exit', () => writeFileSync(process.env.BENCH_PEAK_FILE, String(process.resourceUsage().maxRSS)));
`;

/** One start to exit: its wall time and peak RSS. */
function startOnce(command: Case, hook: string, peakFile: string, nodeFlags: string[] = []): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child: ChildProcess = spawn(process.execPath, [...nodeFlags, '--import', hook, ...command.args], {
      stdio: 'ignore',
      env: { ...command.env, BENCH_PEAK_FILE: peakFile },
    });
    child.once('error', reject);
    firstConnect = undefined;
    child.once('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const toConnectMs = firstConnect === undefined ? undefined : Number(firstConnect - started) / 1e6;
      if (code !== 0) reject(new Error(`${command.name} exited ${code}`));
      else resolve({ ms, peakKb: Number(readFileSync(peakFile, 'utf8')), ...(toConnectMs === undefined ? {} : { toConnectMs }) });
    });
  });
}

const scratch = mkdtempSync(join(tmpdir(), 'bench-cli-'));
const children: ChildProcess[] = [];
try {
  const api = await startServer(
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
  // The proxy the commands reach the service through: it notes each command's first connection.
  const target = new URL(api);
  const proxy = createServer((socket) => {
    firstConnect ??= process.hrtime.bigint();
    const upstream = connect(Number(target.port), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const home = join(scratch, 'home');
  // Agents as this user: the run's own uid could not enter a home under mkdtemp's 0700 directory, and the start of
  // `run` does not depend on it.
  const env = { ...process.env, NO_COLOR: '1', SWARM_NODE_HOME: home, SVC_BASE_URL: proxied, SWARM_AGENT_ISOLATION: 'none' };
  // The set-up waits for its commands (spawnSync), so it goes to the service itself: this process's proxy would wait too.
  const direct = { ...env, SVC_BASE_URL: api };
  const email = 'bench-cli@example.com';
  const token = await signIn(api, email);
  swarmNode(['login', '--token-stdin'], direct, token);
  // `run` on this home, enrolled, runs the agent here: a bundle that answers {} at once, so the run costs the process.
  swarmNode(['enroll'], direct);
  installNoopAgent(home, 'agent_ops_monitor_004');
  await fundWallet(api, email, token.trim(), (warmup + rounds + 5) * 4);

  // Two journals: one empty, one with `journalRows` settled runs over the five agents.
  const emptyHome = join(scratch, 'empty');
  const largeHome = join(scratch, 'large');
  openNodeStore(join(emptyHome, 'var', 'swarm-node.db')).close();
  const large = openNodeStore(join(largeHome, 'var', 'swarm-node.db'));
  const insert = large.prepare(
    `INSERT INTO runs (idempotency_key, agent_id, source, status, run_id, charged_cents, price_cents, started_at, finished_at)
     VALUES (?, ?, 'daemon', ?, ?, ?, 4, ?, ?)`,
  );
  const agents = [
    'agent_ops_monitor_004',
    'agent_dev_review_012',
    'agent_svc_skills_005',
    'agent_research_rag_015',
    'agent_sales_outreach_008',
  ];
  large.transaction(() => {
    for (let i = 0; i < journalRows; i += 1) {
      const ok = i % 10 !== 0;
      insert.run(
        `key-${i}`,
        agents[i % agents.length],
        ok ? 'succeeded' : 'failed',
        `run-${i}`,
        ok ? 4 : 0,
        1_700_000_000_000 + i * 1000,
        1_700_000_000_500 + i * 1000,
      );
    }
  })();
  large.close();

  const node: Case = { name: 'node -e 0', args: ['-e', '0'], env };
  const cases: Case[] = [
    node,
    { name: 'swarm-node --help', args: [bin, '--help'], env },
    { name: 'swarm-node --version', args: [bin, '--version'], env },
    { name: 'swarm-node wallet', args: [bin, 'wallet'], env },
    { name: 'swarm-node run', args: [bin, 'run', 'agent_ops_monitor_004'], env },
    { name: 'swarm-node docs starter-agents', args: [bin, 'docs', 'starter-agents'], env },
    { name: 'runs, empty journal', args: [bin, 'runs', '--local'], env: { ...env, SWARM_NODE_HOME: emptyHome } },
    { name: `runs, ${journalRows} rows`, args: [bin, 'runs', '--local'], env: { ...env, SWARM_NODE_HOME: largeHome } },
  ];
  const hook = join(scratch, 'peak-hook.mjs');
  writeFileSync(hook, PEAK_HOOK);
  const peakFile = join(scratch, 'peak');
  const samples = new Map<string, Sample[]>(cases.map((c) => [c.name, []]));
  for (let round = 0; round < warmup + rounds; round += 1) {
    const order = cases.map((_, index) => cases[(index + round) % cases.length]!);
    for (const command of order) {
      const sample = await startOnce(command, hook, peakFile);
      if (round >= warmup) samples.get(command.name)!.push(sample);
    }
  }

  if (values.profile !== undefined) {
    for (const command of cases) {
      const dir = join(values.profile, command.name.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, ''));
      await startOnce(command, hook, peakFile, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    }
    process.stdout.write(`profiles of one start each: ${values.profile}\n`);
  }

  const ratiosOf = (name: string, baseline: string): number[] =>
    samples.get(name)!.map((sample, round) => sample.ms / samples.get(baseline)![round]!.ms);
  const goals: Array<{ name: string; baseline: string; goal: number }> = [
    { name: 'swarm-node --help', baseline: node.name, goal: 1.3 },
    { name: 'swarm-node --version', baseline: node.name, goal: 1.3 },
    { name: 'swarm-node wallet', baseline: node.name, goal: 2.5 },
    { name: 'swarm-node run', baseline: node.name, goal: 4 },
    { name: 'swarm-node docs starter-agents', baseline: node.name, goal: 2.5 },
    { name: `runs, ${journalRows} rows`, baseline: 'runs, empty journal', goal: 1.1 },
  ];
  const rows = [['command', 'median ms', 'peak MB', 'vs', 'ratio', 'goal', '']];
  rows.push([
    node.name,
    median(samples.get(node.name)!.map((s) => s.ms)).toFixed(1),
    (median(samples.get(node.name)!.map((s) => s.peakKb)) / 1024).toFixed(1),
    '',
    '',
    '',
    '',
  ]);
  const lines: string[] = [];
  let judged = true;
  for (const { name, baseline, goal } of goals) {
    const ratios = ratiosOf(name, baseline);
    const ratio = median(ratios);
    const narrow = spreadOf(ratios) <= SPREAD_LIMIT;
    judged &&= narrow;
    const mine = samples.get(name)!;
    rows.push([
      name,
      median(mine.map((s) => s.ms)).toFixed(1),
      (median(mine.map((s) => s.peakKb)) / 1024).toFixed(1),
      baseline === node.name ? 'node' : 'empty',
      `${ratio.toFixed(2)}x`,
      `<= ${goal}x`,
      !narrow ? 'too noisy' : ratio <= goal ? 'meets' : 'MISSES',
    ]);
    lines.push(`${name}: ${spreadLine(ratios)}`);
  }
  // The start without the request: up to the first connection, against node -e 0 start to exit, paired by round.
  const startRows = [['command', 'to connect ms', 'round trip ms', 'vs', 'ratio', 'goal', '']];
  const startLines: string[] = [];
  for (const name of ['swarm-node wallet', 'swarm-node docs starter-agents', 'swarm-node run']) {
    const mine = samples.get(name)!;
    if (mine.some((sample) => sample.toConnectMs === undefined)) throw new Error(`${name} never connected to the service`);
    const ratios = mine.map((sample, round) => sample.toConnectMs! / samples.get(node.name)![round]!.ms);
    const ratio = median(ratios);
    const narrow = spreadOf(ratios) <= SPREAD_LIMIT;
    judged &&= narrow;
    startRows.push([
      name,
      median(mine.map((sample) => sample.toConnectMs!)).toFixed(1),
      median(mine.map((sample) => sample.ms - sample.toConnectMs!)).toFixed(1),
      'node',
      `${ratio.toFixed(2)}x`,
      '<= 1.5x',
      !narrow ? 'too noisy' : ratio <= 1.5 ? 'meets' : 'MISSES',
    ]);
    startLines.push(`${name}, to connect: ${spreadLine(ratios)}`);
  }
  process.stdout.write(`swarm-node start to exit, ${rounds} rotating rounds (+${warmup} warm-up), ratios paired within each round\n\n`);
  process.stdout.write(`${table(rows)}\n\n${lines.join('\n')}\n`);
  process.stdout.write(
    `\nThe start without the request: from start to the first connection to the service; the round trip (that connection to the exit) apart\n\n`,
  );
  process.stdout.write(`${table(startRows)}\n\n${startLines.join('\n')}\n`);
  if (!judged)
    process.stdout.write(
      '\nSome ratios spread too wide to judge on this machine now: run again when it is quieter, or with more --rounds.\n',
    );
  proxy.close();
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}

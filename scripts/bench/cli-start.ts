// How long a swarm-node command takes from start to exit, against its baseline measured in the same run
// (docs/operations.md "Benchmarks"):
// - `--help`, `--version` against `node -e 0`: goal at most 1.3x;
// - network commands (`wallet`, `docs <section>`) against `node -e 0`, with their peak RSS: goal at most 2.5x;
// - `runs` on a journal of 100k rows against `runs` on an empty one: goal at most 1.1x.
// Each round starts every command once, in an order that rotates from round to round, so that the machine's noise
// hits each alike; each ratio is taken within its round (paired), and the rounds' spread says whether the figures
// can be judged at all. The service runs as its own process, started once.
// Run with: npm run bench:cli-start -- [--rounds N] [--warmup N] [--journal-rows N]
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openNodeStore } from '../../src/node/store/database.js';
import { median, positiveInteger, signIn, spreadLine, spreadOf, SPREAD_LIMIT, startServer, swarmNode, table } from './support.js';

declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:cli-start -- [options]

  --rounds <n>         rounds, each starting every command once       default 15
  --warmup <n>         unmeasured rounds first                          default 2
  --journal-rows <n>   runs in the large journal                        default 100000
`;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '15' },
    warmup: { type: 'string', default: '2' },
    'journal-rows': { type: 'string', default: '100000' },
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
}

/**
 * A preload every measured command gets (the baseline too, so it costs each alike): at exit it writes the process's
 * peak resident set (ru_maxrss) to the file its environment names. Node reports no child's rusage.
 */
const PEAK_HOOK = `import { writeFileSync } from 'node:fs';
process.on('exit', () => writeFileSync(process.env.BENCH_PEAK_FILE, String(process.resourceUsage().maxRSS)));
`;

/** One start to exit: its wall time and peak RSS. */
function startOnce(command: Case, hook: string, peakFile: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child: ChildProcess = spawn(process.execPath, ['--import', hook, ...command.args], {
      stdio: 'ignore',
      env: { ...command.env, BENCH_PEAK_FILE: peakFile },
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) reject(new Error(`${command.name} exited ${code}`));
      else resolve({ ms, peakKb: Number(readFileSync(peakFile, 'utf8')) });
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
  const home = join(scratch, 'home');
  const env = { ...process.env, NO_COLOR: '1', SWARM_NODE_HOME: home, SVC_BASE_URL: api };
  swarmNode(['login', '--token-stdin'], env, await signIn(api, 'bench-cli@example.com'));

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
    { name: 'swarm-node docs starter-agents', args: [bin, 'docs', 'starter-agents'], env },
    { name: 'runs, empty journal', args: [bin, 'runs'], env: { ...env, SWARM_NODE_HOME: emptyHome } },
    { name: `runs, ${journalRows} rows`, args: [bin, 'runs'], env: { ...env, SWARM_NODE_HOME: largeHome } },
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

  const ratiosOf = (name: string, baseline: string): number[] =>
    samples.get(name)!.map((sample, round) => sample.ms / samples.get(baseline)![round]!.ms);
  const goals: Array<{ name: string; baseline: string; goal: number }> = [
    { name: 'swarm-node --help', baseline: node.name, goal: 1.3 },
    { name: 'swarm-node --version', baseline: node.name, goal: 1.3 },
    { name: 'swarm-node wallet', baseline: node.name, goal: 2.5 },
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
  process.stdout.write(`swarm-node start to exit, ${rounds} rotating rounds (+${warmup} warm-up), ratios paired within each round\n\n`);
  process.stdout.write(`${table(rows)}\n\n${lines.join('\n')}\n`);
  if (!judged)
    process.stdout.write(
      '\nSome ratios spread too wide to judge on this machine now: run again when it is quieter, or with more --rounds.\n',
    );
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}

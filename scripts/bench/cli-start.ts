// Start-up cost of swarm-node (issue 3 "Fast start"): `swarm-node --help` and `--version` against bare `node -e 0`,
// measured in the same run, interleaved so that machine noise hits all three alike. The goal is at most 1.5x.
// Run with: npm run bench:cli-start -- [--runs N] [--warmup N]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

declare const REPO_ROOT: string;

const GOAL_RATIO = 1.5;
const USAGE = `Usage: npm run bench:cli-start -- [options]

  --runs <n>     measured starts of each command     default 20
  --warmup <n>   unmeasured starts of each first     default 3
`;

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '20' }, warmup: { type: 'string', default: '3' }, help: { type: 'boolean', default: false } },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const runs = Number(values.runs);
const warmup = Number(values.warmup);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(warmup) || warmup < 0) {
  process.stderr.write(USAGE);
  process.exit(2);
}

const bin = join(REPO_ROOT, 'bin', 'swarm-node.js');
if (!existsSync(join(REPO_ROOT, 'dist', 'swarm-node.js'))) {
  process.stderr.write('dist/swarm-node.js is missing: run npm run build first (npm run bench:cli-start does).\n');
  process.exit(1);
}

const cases = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'swarm-node --help', args: [bin, '--help'] },
  { name: 'swarm-node --version', args: [bin, '--version'] },
];

function startOnce(args: string[]): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(' ')} exited ${result.status}`);
  return elapsed;
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

for (let i = 0; i < warmup; i += 1) for (const c of cases) startOnce(c.args);
const samples = cases.map(() => [] as number[]);
for (let i = 0; i < runs; i += 1) {
  cases.forEach((c, index) => samples[index]!.push(startOnce(c.args)));
}

const stats = cases.map((c, index) => {
  const sorted = [...samples[index]!].sort((a, b) => a - b);
  return { name: c.name, median: percentile(sorted, 50), p90: percentile(sorted, 90), min: sorted[0]! };
});
const baseline = stats[0]!;
process.stdout.write(`Node ${process.version}, ${runs} interleaved runs each (after ${warmup} warm-up)\n\n`);
process.stdout.write(`${'command'.padEnd(22)} ${'median'.padStart(9)} ${'p90'.padStart(9)} ${'min'.padStart(9)}  ratio (median, p90)\n`);
let worst = 0;
for (const s of stats) {
  const ratio = s.median / baseline.median;
  const ratioP90 = s.p90 / baseline.p90;
  if (s !== baseline) worst = Math.max(worst, ratio);
  const fmt = (ms: number): string => `${ms.toFixed(1)} ms`.padStart(9);
  process.stdout.write(`${s.name.padEnd(22)} ${fmt(s.median)} ${fmt(s.p90)} ${fmt(s.min)}  ${ratio.toFixed(2)}x, ${ratioP90.toFixed(2)}x\n`);
}
process.stdout.write(`\nGoal: at most ${GOAL_RATIO}x node -e 0 (median): ${worst <= GOAL_RATIO ? 'met' : 'NOT met'} (worst ${worst.toFixed(2)}x)\n`);

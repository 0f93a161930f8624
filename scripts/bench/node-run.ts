// Runs through the node (docs/operations.md "Benchmarks"), on loopback, each against a baseline of the same run:
//   1. Added latency: a run started with POST /v1/swarm/execute (svc-api → the daemon's long poll → the agent on
//      this host → the result reported → the answer) against the same agent bundle run directly, through the same
//      runner code (createLocalRunner), with the same stdin: the agent's own time. One run of each, one after the
//      other, in pairs; p50 and p99 of each side and of the paired difference.
//   2. Runs per second through one node with a no-op agent (prints {}), the daemon's concurrency set, against the
//      same agent run directly at the same concurrency (with no node, the service cannot run anything: execute
//      answers 409 no_node_available).
// svc-api and the daemon are the built binaries, each its own process; the load generator (./node-run-load.ts) is
// a third, so the timing never shares a process with what it times. Baseline and node batches alternate in rounds
// whose order rotates, ratios are taken per round (paired), and the spread of the rounds is printed: a part whose
// spread is too wide is said so, and then its figures should not be quoted.
// Run with: npm run bench:node-run -- [--rounds N] [--pairs N] [--burst N] [--concurrency N]
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findAgentSku } from '../../src/contract/agents.js';
import type { LoadAnswer, LoadCommand, Side } from './node-run-load.js';
import {
  fundWallet,
  installNoopAgent,
  median,
  percentileOf,
  positiveInteger,
  signIn,
  SPREAD_LIMIT,
  spreadLine,
  spreadOf,
  startServer,
  swarmNode,
  table,
  until,
} from './support.js';

declare const SCRIPT_DIR: string;
declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:node-run -- [options]

  --rounds <n>        rounds; each measures both sides, in rotating order   default 10
  --pairs <n>         latency: pairs (one direct run, one through the node) per round   default 20
  --burst <n>         throughput: runs of each side per round                default 100
  --concurrency <n>   the daemon's concurrency (SWARM_NODE_CONCURRENCY, 1 to 32), and the
                      executes (or direct runs) in flight at once            default 4
  --warmup <n>        unmeasured pairs first                                 default 5
  --agent <agent_id>  the catalog id the no-op bundle is installed as        default agent_ops_monitor_004
  --skip-latency      only the throughput part
  --skip-throughput   only the latency part
  --keep              keep the temporary directories
`;

interface Round {
  direct: number[];
  node: number[];
  /** node − direct, pair by pair. */
  added: number[];
}

interface Burst {
  directPerSecond: number;
  nodePerSecond: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '10' },
      pairs: { type: 'string', default: '20' },
      burst: { type: 'string', default: '100' },
      concurrency: { type: 'string', default: '4' },
      warmup: { type: 'string', default: '5' },
      agent: { type: 'string', default: 'agent_ops_monitor_004' },
      'skip-latency': { type: 'boolean', default: false },
      'skip-throughput': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const rounds = positiveInteger(values.rounds, '--rounds');
  const pairs = positiveInteger(values.pairs, '--pairs');
  const burst = positiveInteger(values.burst, '--burst');
  const concurrency = positiveInteger(values.concurrency, '--concurrency');
  if (concurrency > 32) throw new Error('--concurrency must be at most 32 (a node has at most 32 run slots)');
  const warmup = positiveInteger(values.warmup, '--warmup');
  const sku = findAgentSku(values.agent);
  if (sku === undefined) throw new Error(`--agent: no agent ${values.agent}`);
  const latency = !values['skip-latency'];
  const throughput = !values['skip-throughput'];

  const scratch = mkdtempSync(join(tmpdir(), 'bench-node-run-'));
  const children: ChildProcess[] = [];
  const stopAll = (): void => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', stopAll);
  try {
    const api = await startServer(
      [
        join(REPO_ROOT, 'bin', 'svc-api.js'),
        '--port',
        '0',
        '--data-dir',
        join(scratch, 'svc-api'),
        '--sandbox',
        '--max-connections-per-address',
        '1024',
      ],
      { SVC_LOG_LEVEL: 'silent' },
      /svc-api listening on (\S+)/,
      children,
    );
    const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
    const token = await signIn(api, email);
    const nodeRuns = warmup + (latency ? rounds * pairs : 0) + (throughput ? rounds * burst : 0);
    const fundedCents = sku.price_cents * (nodeRuns + 10);
    await fundWallet(api, email, token, fundedCents);

    // The node: enrolled, the no-op bundle installed as the agent, registered (served, no schedule), its daemon up.
    const home = join(scratch, 'node');
    const env = {
      ...process.env,
      SWARM_NODE_HOME: home,
      SVC_BASE_URL: api,
      NO_COLOR: '1',
      SWARM_NODE_CONCURRENCY: String(concurrency),
      // Both sides run the agent as this user: as root, a run's own uid could not enter mkdtemp's 0700 directory.
      SWARM_AGENT_ISOLATION: 'none',
    };
    swarmNode(['login', '--token-stdin'], env, `${token}\n`);
    swarmNode(['enroll'], env);
    installNoopAgent(home, sku.agent_id);
    swarmNode(['register', sku.agent_id], env);
    const daemon = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), 'daemon'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(daemon);
    const pulled = countEvents(daemon, 'run_pulled');
    await until(async () => serving(api, token, sku.agent_id), 'the node to be online and serving the agent', 30_000, 100);

    const load = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'node-run-load.ts')], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(load);
    const ask = loadGenerator(load);
    await ask({
      op: 'setup',
      setup: { api, token, email, agentId: sku.agent_id, home, varDir: join(scratch, 'direct-var'), connections: concurrency },
    });

    process.stderr.write(`warming up (${warmup} pairs)…\n`);
    let nodeOk = 0;
    const warm = await ask({ op: 'pairs', count: warmup, first: 'direct' });
    nodeOk += expectNoFailures(warm).node.length;

    const latencyRounds: Round[] = [];
    const bursts: Burst[] = [];
    for (let round = 0; round < rounds; round += 1) {
      // Rotating: even rounds the baseline first, odd rounds the node first, in both parts.
      const first: Side = round % 2 === 0 ? 'direct' : 'node';
      const second: Side = first === 'direct' ? 'node' : 'direct';
      process.stderr.write(`round ${round + 1}/${rounds} (${first} first)…\n`);
      if (latency) {
        const answer = expectNoFailures(await ask({ op: 'pairs', count: pairs, first }));
        nodeOk += answer.node.length;
        latencyRounds.push({ direct: answer.direct, node: answer.node, added: answer.node.map((ms, i) => ms - answer.direct[i]!) });
      }
      if (throughput) {
        const perSecond: Record<Side, number> = { direct: 0, node: 0 };
        for (const side of [first, second]) {
          const answer = expectNoFailures(await ask({ op: 'burst', side, count: burst, concurrency }));
          if (side === 'node') nodeOk += answer.completed;
          perSecond[side] = answer.completed / answer.seconds;
        }
        bursts.push({ directPerSecond: perSecond.direct, nodePerSecond: perSecond.node });
      }
    }
    await ask({ op: 'exit' });

    const wallet = (await (await fetch(`${api}/v1/swarm/wallet`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      balance_cents: number;
    };
    const expectedBalance = fundedCents - nodeOk * sku.price_cents;
    const ledgerOk = wallet.balance_cents === expectedBalance && pulled() === nodeOk;

    const out: string[] = [
      `node-run bench: ${sku.agent_id} as a no-op bundle (prints {}), loopback, node ${process.version}; ${rounds} rounds, daemon concurrency ${concurrency}`,
    ];
    const tooWide: string[] = [];
    if (latency && !reportLatency(out, latencyRounds)) tooWide.push('the latency');
    if (throughput && !reportThroughput(out, bursts, concurrency)) tooWide.push('the runs per second');
    out.push(
      '',
      `ledger check: ${nodeOk} runs through the node, ${pulled()} pulled by the daemon; balance ${wallet.balance_cents} cents, expected ${expectedBalance}: ${ledgerOk ? 'ok' : 'MISMATCH'}`,
    );
    if (tooWide.length > 0) {
      out.push(
        '',
        `TOO WIDE TO JUDGE: ${tooWide.join(' and ')}. The rounds' ratios spread over more than ${SPREAD_LIMIT * 100}% of their median (interquartile); ` +
          'quote none of those figures. Rerun on a quieter machine, or with more rounds or a larger --burst.',
      );
    }
    process.stdout.write(`${out.join('\n')}\n`);
    if (!ledgerOk) process.exitCode = 1;
  } finally {
    stopAll();
    if (!values.keep) rmSync(scratch, { recursive: true, force: true });
    else process.stdout.write(`kept ${scratch}\n`);
  }
}

/** Pooled p50/p99 of each side and of the paired difference; per round, the p50s and their ratio. */
function reportLatency(out: string[], rounds: Round[]): boolean {
  const direct = rounds.flatMap((round) => round.direct);
  const node = rounds.flatMap((round) => round.node);
  const added = rounds.flatMap((round) => round.added);
  const ratios = rounds.map((round) => median(round.node) / median(round.direct));
  const addedP50s = rounds.map((round) => median(round.added));
  const spread = spreadOf(ratios);
  const ms = (value: number): string => value.toFixed(1);
  out.push(
    '',
    `1. latency, one run at a time (${direct.length} pairs):`,
    table([
      ['', 'p50 ms', 'p99 ms', 'min ms', 'max ms'],
      [
        'agent run directly (baseline)',
        ms(percentileOf(direct, 0.5)),
        ms(percentileOf(direct, 0.99)),
        ms(Math.min(...direct)),
        ms(Math.max(...direct)),
      ],
      ['run through the node', ms(percentileOf(node, 0.5)), ms(percentileOf(node, 0.99)), ms(Math.min(...node)), ms(Math.max(...node))],
      [
        'added by the node (paired)',
        ms(percentileOf(added, 0.5)),
        ms(percentileOf(added, 0.99)),
        ms(Math.min(...added)),
        ms(Math.max(...added)),
      ],
    ]),
    `through the node / directly: p50 ${(percentileOf(node, 0.5) / percentileOf(direct, 0.5)).toFixed(2)}x, p99 ${(percentileOf(node, 0.99) / percentileOf(direct, 0.99)).toFixed(2)}x`,
    `per round, p50 ratio ${list(ratios, 2)}; added p50 ms ${list(addedP50s, 1)}`,
    spreadLine(ratios, spread),
  );
  return spread <= SPREAD_LIMIT;
}

function reportThroughput(out: string[], bursts: Burst[], concurrency: number): boolean {
  const ratios = bursts.map((b) => b.nodePerSecond / b.directPerSecond);
  const spread = spreadOf(ratios);
  const direct = bursts.map((b) => b.directPerSecond);
  const node = bursts.map((b) => b.nodePerSecond);
  out.push(
    '',
    `2. runs per second, ${concurrency} at a time (${bursts.length} rounds):`,
    table([
      ['', 'median runs/s', 'min', 'max'],
      ['agent run directly (baseline)', median(direct).toFixed(1), Math.min(...direct).toFixed(1), Math.max(...direct).toFixed(1)],
      ['runs through one node', median(node).toFixed(1), Math.min(...node).toFixed(1), Math.max(...node).toFixed(1)],
    ]),
    `per round, node / direct ${list(ratios, 2)}`,
    spreadLine(ratios, spread),
  );
  return spread <= SPREAD_LIMIT;
}

function list(values: number[], digits: number): string {
  return values.map((value) => value.toFixed(digits)).join(' ');
}

function expectNoFailures<T extends { failures: string[] }>(answer: T): T {
  if (answer.failures.length > 0) throw new Error(`${answer.failures.length} run(s) failed, the first: ${answer.failures[0]}`);
  return answer;
}

/** Sends one command to the load generator and resolves with its answer (one at a time). */
function loadGenerator(child: ChildProcess): <C extends LoadCommand>(command: C) => Promise<AnswerTo<C>> {
  return (command) =>
    new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`the load generator exited ${code}`));
      child.once('exit', onExit);
      if (command.op === 'exit') {
        child.send(command);
        child.once('exit', () => resolve(undefined as never));
        child.off('exit', onExit);
        return;
      }
      child.once('message', (answer: LoadAnswer) => {
        child.off('exit', onExit);
        if (answer.op === 'error') reject(new Error(`load generator: ${answer.message}`));
        else resolve(answer as never);
      });
      child.send(command);
    });
}

type AnswerTo<C extends LoadCommand> = C extends { op: 'pairs' }
  ? Extract<LoadAnswer, { op: 'pairs' }>
  : C extends { op: 'burst' }
    ? Extract<LoadAnswer, { op: 'burst' }>
    : C extends { op: 'setup' }
      ? Extract<LoadAnswer, { op: 'ready' }>
      : undefined;

/** Reads the daemon's stdout (it must be read, or the daemon blocks on a full pipe) and counts one event. */
function countEvents(daemon: ChildProcess, event: string): () => number {
  let count = 0;
  let tail = '';
  daemon.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (tail + chunk).split('\n');
    tail = lines.pop()!;
    for (const line of lines) if (line.includes(`event=${event} `)) count += 1;
  });
  return () => count;
}

async function serving(api: string, token: string, agentId: string): Promise<boolean> {
  const answer = await fetch(`${api}/v1/swarm/nodes`, { headers: { authorization: `Bearer ${token}` } });
  const fleet = (await answer.json()) as { nodes?: { online: boolean; agents: string[] }[] };
  return fleet.nodes?.some((node) => node.online && node.agents.includes(agentId)) ?? false;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:node-run: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

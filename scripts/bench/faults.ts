// Faults without wasted work (docs/operations.md "Benchmarks"), replayed on each engine with real processes: svc-api
// (one on SQLite; two, and a third whose clock is two minutes ahead, on one PostgreSQL database), real swarm-node
// daemons whose agent records each start and end, and the load from a process of its own (./fault-load.ts). Scenarios:
//   outage   the instance the nodes poll is SIGKILLed while runs are in flight and started again 10 s later
//   frozen   a daemon is SIGSTOPped with a poll open, handed a run that is not retry-safe, and thawed after the
//            service failed it node_lost
//   full     one node's var/ (a 16 MiB tmpfs) is filled for 10 s under load, beside a healthy node (root only)
//   skewed   (PostgreSQL) runs executed through the instance two minutes ahead, for a node polling another
//   kills    the instance the nodes poll is SIGKILLed nine times in a minute under load, started again each time
//   nodes200 200 polling nodes (stand-ins, ./stand-in-node.ts) against one instance: its CPU, memory and the runs'
//            latency, against 20 nodes (./fault-many-nodes.ts)
// For each: runs, refunds, agents that ran for refunded runs (goal 0), results thrown away (an agent's end the
// service never took; goal 0), the node's idle seconds after the outage (from the service's return to its next
// claim; goal <= 5 s) and the ledger check of every user. It prints the figures and whether each goal was met.
// Run with: npm run bench:faults -- [--engines sqlite,postgres] [--keep]
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startPostgresServer, type PostgresServer } from '../../test/helpers/postgres-server.js';
import { fillFilesystem, putOnTmpfs, releaseTmpfs } from '../../test/helpers/tmpfs.js';
import { ApiInstance, BenchNode, LIBFAKETIME, ledgerProblems, postgresBooks, sqliteBooks, type Books } from './fault-fleet.js';
import type { ExecuteCommand, LoadAnswer, LoadCommand } from './fault-load.js';
import { pollingNodes } from './fault-many-nodes.js';
import { fundWallet, percentileOf, signIn, table, until } from './support.js';

declare const SCRIPT_DIR: string;

const USAGE = `Usage: npm run bench:faults -- [options]

  --engines <list>      sqlite, postgres or both                 default sqlite,postgres
  --outage-seconds <n>  how long the instance stays down         default 10
  --scenarios <list>    outage, frozen, full, skewed, kills, nodes200 (skewed on PostgreSQL only; full as root only)
                        default all
  --keep                keep the temporary directories (the daemons' logs are there)
`;

const OPS = 'agent_ops_monitor_004'; // retry-safe
const SALES = 'agent_sales_outreach_008'; // not retry-safe
const INPUTS: Record<string, Record<string, string>> = { [SALES]: { leads: '/srv/leads.csv', template: 'Hello {{name}}' } };
const LEASE_SECONDS = 20;
const IDLE_GOAL_SECONDS = 5;
const asRoot = process.getuid?.() === 0;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Outcome {
  engine: string;
  scenario: string;
  runs: number;
  refunds: number;
  /** Refunded runs whose agent started anyway. */
  wastedAgents: number;
  /** Agents that answered and whose result the service never took. */
  thrownAway: number;
  idleSeconds?: number;
  /** Keys offered by the load, and runs that succeeded (kills). */
  offered?: number;
  finished?: number;
  /** From a key's first offer to its run's end, in seconds (kills). */
  p99Seconds?: number;
  note: string;
  ledger: string[];
}

/** What every scenario of one engine shares. */
interface Bench {
  engine: 'sqlite' | 'postgres';
  scratch: string;
  children: ChildProcess[];
  load: ChildProcess;
  books: Books;
  /** The instance the nodes poll. */
  a: ApiInstance;
  /** Where the users' executes go while `a` is down (PostgreSQL's second instance; `a` itself on SQLite). */
  b: ApiInstance;
  nodes: BenchNode[];
  /** The instance two minutes ahead (PostgreSQL) and what it needs. */
  skewed?: () => Promise<ApiInstance>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      engines: { type: 'string', default: 'sqlite,postgres' },
      'outage-seconds': { type: 'string', default: '10' },
      scenarios: { type: 'string', default: 'outage,frozen,full,skewed,kills,nodes200' },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  const outageMs = Number(values['outage-seconds']) * 1000;
  const scenarios = new Set(values.scenarios.split(','));
  const outcomes: Outcome[] = [];
  for (const engine of values.engines.split(',') as ('sqlite' | 'postgres')[])
    outcomes.push(...(await runEngine(engine, outageMs, scenarios, values.keep)));
  report(outcomes, outageMs);
}

async function runEngine(engine: 'sqlite' | 'postgres', outageMs: number, scenarios: Set<string>, keep: boolean): Promise<Outcome[]> {
  const scratch = mkdtempSync(join(tmpdir(), `bench-faults-${engine}-`));
  const children: ChildProcess[] = [];
  const load = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'fault-load.ts')], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(load);
  let postgres: PostgresServer | undefined;
  const args = ['--lease-seconds', String(LEASE_SECONDS)];
  let bench: Bench | undefined;
  try {
    if (engine === 'sqlite') {
      const a = new ApiInstance(join(scratch, 'api-a'), {}, args, children);
      await a.start();
      bench = { engine, scratch, children, load, books: sqliteBooks(a.dataDir), a, b: a, nodes: [] };
    } else {
      postgres = await startPostgresServer({ durable: true });
      const url = await postgres.createDatabase('svc_faults');
      const shared = {
        SVC_DATABASE_URL: url,
        SVC_JWT_SECRET: randomBytes(32).toString('base64url'),
        SVC_WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64url')}`,
      };
      const a = new ApiInstance(join(scratch, 'api-a'), shared, args, children);
      await a.start();
      const b = new ApiInstance(join(scratch, 'api-b'), shared, args, children);
      await b.start();
      const skewed = async (): Promise<ApiInstance> => {
        const c = new ApiInstance(
          join(scratch, 'api-c'),
          { ...shared, LD_PRELOAD: LIBFAKETIME, FAKETIME: '+2m', FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_DONT_RESET: '1' },
          args,
          children,
        );
        await c.start();
        return c;
      };
      bench = { engine, scratch, children, load, books: postgresBooks(url), a, b, nodes: [], skewed };
    }
    const outcomes: Outcome[] = [];
    if (scenarios.has('outage')) outcomes.push(await outage(bench, outageMs));
    if (scenarios.has('frozen')) outcomes.push(await frozen(bench));
    if (scenarios.has('full') && asRoot) outcomes.push(await fullVar(bench));
    if (scenarios.has('skewed') && bench.skewed !== undefined) outcomes.push(await skewedInstance(bench));
    if (scenarios.has('kills')) outcomes.push(await kills(bench));
    if (scenarios.has('nodes200')) outcomes.push(await manyNodes(bench));
    return outcomes;
  } finally {
    await Promise.all((bench?.nodes ?? []).map((node) => node.stop().catch(() => undefined)));
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await bench?.books.close().catch(() => undefined);
    postgres?.stop();
    if (keep) process.stdout.write(`kept ${scratch}\n`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

/** A signed-in user with funds, and `count` nodes of theirs polling `api`, agents answering after `delayMs`. */
async function fleet(
  bench: Bench,
  label: string,
  count: number,
  agents: string[],
  delayMs: number,
  api = bench.a.origin,
): Promise<{ email: string; token: string; nodes: BenchNode[] }> {
  const email = `faults-${label}-${randomUUID().slice(0, 8)}@example.com`;
  const token = await signIn(bench.a.origin, email);
  await fundWallet(bench.a.origin, email, token, 10_000);
  const nodes: BenchNode[] = [];
  for (let i = 0; i < count; i += 1) {
    const node = new BenchNode(join(bench.scratch, `${label}-${i}`), api, 2);
    node.enroll(token, agents, INPUTS, delayMs);
    nodes.push(node);
    bench.nodes.push(node);
  }
  return { email, token, nodes };
}

/** Until the service counts every node of the user online, serving its agents (each polled after it synced them). */
async function online(bench: Bench, token: string, count: number): Promise<void> {
  await until(
    async () => {
      const fleet = (await (await fetch(`${bench.a.origin}/v1/swarm/nodes`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
        nodes: { online: boolean; agents: string[] }[];
      };
      return fleet.nodes.filter((node) => node.online && node.agents.length > 0).length >= count;
    },
    'the nodes online',
    30_000,
    100,
  );
}

let commands = 0;

/** Sends a command to the load generator; resolves with its answer (commands overlap: matched by id). */
function send(load: ChildProcess, command: Omit<LoadCommand, 'id'> | Omit<ExecuteCommand, 'id'>): Promise<LoadAnswer> {
  const id = (commands += 1);
  return new Promise((resolve) => {
    const listener = (answer: LoadAnswer): void => {
      if (answer.id !== id) return;
      load.off('message', listener);
      resolve(answer);
    };
    load.on('message', listener);
    load.send({ ...command, id });
  });
}

async function settled(bench: Bench, email: string): Promise<void> {
  await until(
    async () => (await bench.books.runs(email)).every((run) => run.status !== 'queued' && run.status !== 'running'),
    'every run to end',
    180_000,
    250,
  );
}

/** The figures of one scenario from the service's books and the agents' own records. */
async function measure(
  bench: Bench,
  scenario: string,
  email: string,
  nodes: BenchNode[],
  note: string,
  idleSeconds?: number,
): Promise<Outcome> {
  const runs = await bench.books.runs(email);
  const ledger = await bench.books.ledger(email);
  const refunded = new Set(ledger.filter((entry) => entry.kind === 'refund').map((entry) => entry.run_id));
  const events = nodes.flatMap((node) => node.events());
  const started = new Set(events.filter((event) => event.event === 'start').map((event) => event.run_id));
  const ends = events.filter((event) => event.event === 'end').length;
  const taken = runs.filter((run) => run.status === 'succeeded' && run.finished_by === 'node').length;
  return {
    engine: bench.engine,
    scenario,
    runs: runs.length,
    refunds: refunded.size,
    wastedAgents: [...refunded].filter((runId) => runId !== null && started.has(runId)).length,
    thrownAway: Math.max(0, ends - taken),
    ...(idleSeconds === undefined ? {} : { idleSeconds }),
    note,
    ledger: await ledgerProblems(bench.books, email),
  };
}

/** The instance the nodes poll dies with runs in flight and is back `outageMs` later on the same port. */
async function outage(bench: Bench, outageMs: number): Promise<Outcome> {
  const user = await fleet(bench, 'outage', 2, [OPS], 2_000);
  for (const node of user.nodes) await node.start(bench.children, join(node.home, 'daemon.log'));
  await online(bench, user.token, 2);
  const answered = send(bench.load, {
    op: 'load',
    origins: [bench.b.origin],
    token: user.token,
    email: user.email,
    agents: [OPS],
    inputs: INPUTS,
    perSecond: 1,
  });
  await until(
    async () => (await bench.books.runs(user.email)).filter((run) => run.status === 'running').length >= 2,
    'runs in flight on the nodes',
    60_000,
    100,
  );
  await bench.a.kill();
  await sleep(outageMs);
  await bench.a.start();
  const backAt = Date.now();
  // A run waits when the service is back: on SQLite the executes failed meanwhile (the load sends them again).
  if (bench.engine === 'sqlite')
    void send(bench.load, { op: 'execute', origin: bench.a.origin, token: user.token, email: user.email, agents: [OPS], inputs: INPUTS });
  let claimedAt = 0;
  await until(
    async () => {
      const claims = (await bench.books.runs(user.email)).map((run) => run.claimed_at ?? 0).filter((at) => at >= backAt);
      claimedAt = claims.length === 0 ? 0 : Math.min(...claims);
      return claimedAt > 0;
    },
    'a node to claim a run after the outage',
    120_000,
    50,
  );
  await sleep(10_000);
  bench.load.send({ op: 'stop' });
  const load = await answered;
  await settled(bench, user.email);
  return measure(
    bench,
    'outage',
    user.email,
    user.nodes,
    `${outageMs / 1000} s down; executes ${JSON.stringify(load.statuses)}`,
    (claimedAt - backAt) / 1000,
  );
}

/** A daemon frozen with its poll open is handed a run that is not retry-safe, and thawed once it was refunded. */
async function frozen(bench: Bench): Promise<Outcome> {
  const user = await fleet(bench, 'frozen', 1, [SALES], 500);
  const [node] = user.nodes as [BenchNode];
  await node.start(bench.children, join(node.home, 'daemon.log'));
  await online(bench, user.token, 1);
  let runId = '';
  for (let attempt = 1; runId === ''; attempt += 1) {
    node.signal('SIGSTOP');
    const sent = await send(bench.load, {
      op: 'execute',
      origin: bench.a.origin,
      token: user.token,
      email: user.email,
      agents: [SALES],
      inputs: INPUTS,
    });
    const [id] = sent.runIds as [string];
    if (id === '') throw new Error(`the execute was refused: ${JSON.stringify(sent.statuses)}`);
    const handed = await until(
      async () => (await bench.books.runs(user.email)).some((run) => run.run_id === id && run.status === 'running'),
      'the frozen node to be handed the run',
      5_000,
      50,
    ).then(
      () => true,
      () => false,
    );
    if (handed) runId = id;
    else {
      // The freeze fell between two polls: that run is cancelled, and the freeze tried again.
      if (attempt === 3) throw new Error('the frozen node was never handed a run');
      await fetch(`${bench.a.origin}/v1/swarm/runs/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${user.token}` } });
      node.signal('SIGCONT');
      await sleep(1_000);
    }
  }
  await until(
    async () => (await bench.books.runs(user.email)).some((run) => run.run_id === runId && run.status === 'failed'),
    "the service to fail the frozen node's run",
    (LEASE_SECONDS + 30) * 1000,
    250,
  );
  node.signal('SIGCONT');
  await until(
    async () => node.lines.some((line) => line.includes(runId) && /event=run_(lost|failed|succeeded)/.test(line)),
    'the thawed daemon to deal with the run',
    60_000,
    100,
  );
  await settled(bench, user.email);
  return measure(bench, 'frozen', user.email, user.nodes, `frozen past the ${LEASE_SECONDS} s lease of a run it was handed`);
}

/** One node's var/ full for 10 s under load, beside a healthy one. */
async function fullVar(bench: Bench): Promise<Outcome> {
  const user = await fleet(bench, 'full', 2, [OPS], 1_000);
  const [full, healthy] = user.nodes as [BenchNode, BenchNode];
  const varDir = putOnTmpfs(join(full.home, 'var'), '16m');
  try {
    for (const node of user.nodes) await node.start(bench.children, join(node.home, 'daemon.log'));
    await online(bench, user.token, 2);
    const answered = send(bench.load, {
      op: 'load',
      origins: [bench.a.origin],
      token: user.token,
      email: user.email,
      agents: [OPS],
      inputs: INPUTS,
      perSecond: 2,
    });
    await until(async () => full.events().length > 0 && healthy.events().length > 0, 'both nodes to run agents', 60_000, 100);
    const filler = fillFilesystem(varDir);
    await until(async () => full.lines.some((line) => line.includes('event=journal_unwritable')), 'the full node to say so', 30_000, 100);
    await sleep(10_000);
    rmSync(filler);
    await until(async () => full.lines.some((line) => line.includes('event=journal_writable')), 'the node to resume', 30_000, 100);
    await sleep(5_000);
    bench.load.send({ op: 'stop' });
    await answered;
    await settled(bench, user.email);
    const handedBack = (await bench.books.attempts(user.email)).filter((attempt) => attempt.error === 'not_started').length;
    return await measure(
      bench,
      'full var/',
      user.email,
      user.nodes,
      `10 s full; ${handedBack} run(s) handed back not_started and run elsewhere`,
    );
  } finally {
    await full.stop();
    releaseTmpfs(varDir);
  }
}

/** Runs executed through an instance two minutes ahead, for a node polling one whose clock is right. */
async function skewedInstance(bench: Bench): Promise<Outcome> {
  const ahead = await bench.skewed!();
  const user = await fleet(bench, 'skewed', 1, [OPS], 3_000);
  for (const node of user.nodes) await node.start(bench.children, join(node.home, 'daemon.log'));
  await online(bench, user.token, 1);
  const answered = send(bench.load, {
    op: 'load',
    origins: [ahead.origin],
    token: user.token,
    email: user.email,
    agents: [OPS],
    inputs: INPUTS,
    perSecond: 1,
  });
  await sleep(15_000);
  bench.load.send({ op: 'stop' });
  const load = await answered;
  await settled(bench, user.email);
  const lost = (await bench.books.attempts(user.email)).filter((attempt) => attempt.error === 'node_lost').length;
  return measure(bench, 'skewed +2 min', user.email, user.nodes, `executes ${JSON.stringify(load.statuses)}; ${lost} attempt(s) node_lost`);
}

const KILLS = 9;
const KILLS_WINDOW_MS = 60_000;

/**
 * The instance the nodes poll SIGKILLed nine times in a minute, started again at once each time, under 5 executes a
 * second (on PostgreSQL they alternate with the other instance). Each key is offered until the service takes it.
 */
async function kills(bench: Bench): Promise<Outcome> {
  const user = await fleet(bench, 'kills', 2, [OPS], 500);
  for (const node of user.nodes) await node.start(bench.children, join(node.home, 'daemon.log'));
  await online(bench, user.token, 2);
  const origins = bench.engine === 'sqlite' ? [bench.a.origin] : [bench.a.origin, bench.b.origin];
  const answered = send(bench.load, {
    op: 'load',
    origins,
    token: user.token,
    email: user.email,
    agents: [OPS],
    inputs: INPUTS,
    perSecond: 5,
  });
  const began = Date.now();
  for (let kill = 1; kill <= KILLS; kill += 1) {
    await sleep(Math.max(0, began + (kill * KILLS_WINDOW_MS) / (KILLS + 1) - Date.now()));
    await bench.a.kill();
    await bench.a.start();
  }
  await sleep(Math.max(0, began + KILLS_WINDOW_MS - Date.now()));
  bench.load.send({ op: 'stop' });
  const load = await answered;
  await settled(bench, user.email);
  const runs = await bench.books.runs(user.email);
  const latencies = runs
    .filter((run) => run.finished_at !== null && load.offeredAt[run.run_id] !== undefined)
    .map((run) => (run.finished_at! - load.offeredAt[run.run_id]!) / 1000);
  const offered = Object.values(load.statuses).reduce((sum, count) => sum + count, 0);
  const outcome = await measure(bench, `${KILLS} kills in a minute`, user.email, user.nodes, `executes ${JSON.stringify(load.statuses)}`);
  return {
    ...outcome,
    offered,
    finished: runs.filter((run) => run.status === 'succeeded').length,
    p99Seconds: percentileOf(latencies, 0.99),
  };
}

/** 200 stand-in nodes polling one instance (./fault-many-nodes.ts); its users' books checked like the others'. */
async function manyNodes(bench: Bench): Promise<Outcome> {
  const measured = await pollingNodes(bench.a, bench.children);
  const problems = (await Promise.all(measured.emails.map((email) => ledgerProblems(bench.books, email)))).flat();
  const runs = (await Promise.all(measured.emails.map((email) => bench.books.runs(email)))).flat();
  const refunds = runs.filter((run) => run.status === 'failed').length;
  return {
    engine: bench.engine,
    scenario: '200 polling nodes',
    runs: runs.length,
    refunds,
    wastedAgents: 0,
    thrownAway: 0,
    note: measured.summary,
    ledger: problems,
  };
}

function report(outcomes: Outcome[], outageMs: number): void {
  const rows = [
    [
      'engine',
      'scenario',
      'runs',
      'refunds',
      'agents for refunded runs',
      'results thrown away',
      `idle after ${outageMs / 1000} s outage`,
      'ledger',
    ],
  ];
  for (const outcome of outcomes) {
    rows.push([
      outcome.engine,
      outcome.scenario,
      String(outcome.runs),
      String(outcome.refunds),
      String(outcome.wastedAgents),
      String(outcome.thrownAway),
      outcome.idleSeconds === undefined ? '-' : `${outcome.idleSeconds.toFixed(2)} s`,
      outcome.ledger.length === 0 ? 'balances' : `${outcome.ledger.length} PROBLEM(S)`,
    ]);
  }
  process.stdout.write(`\n${table(rows)}\n\n`);
  for (const outcome of outcomes) {
    if (outcome.offered === undefined) continue;
    process.stdout.write(
      `${outcome.engine} ${outcome.scenario}: ${outcome.offered} keys offered, ${outcome.finished} runs finished, p99 from offer to end ${outcome.p99Seconds!.toFixed(1)} s\n`,
    );
  }
  for (const outcome of outcomes)
    process.stdout.write(
      `${outcome.engine} ${outcome.scenario}: ${outcome.note}\n${outcome.ledger.map((problem) => `  ledger: ${problem}\n`).join('')}`,
    );
  const wasted = outcomes.reduce((sum, outcome) => sum + outcome.wastedAgents, 0);
  const thrown = outcomes.reduce((sum, outcome) => sum + outcome.thrownAway, 0);
  const idles = outcomes.flatMap((outcome) => (outcome.idleSeconds === undefined ? [] : [outcome.idleSeconds]));
  const idle = Math.max(0, ...idles);
  const ledger = outcomes.reduce((sum, outcome) => sum + outcome.ledger.length, 0);
  const verdict = (met: boolean): string => (met ? 'met' : 'NOT MET');
  process.stdout.write(
    `\nagents that ran for refunded runs: ${wasted} (goal 0: ${verdict(wasted === 0)})\n` +
      `results thrown away: ${thrown} (goal 0: ${verdict(thrown === 0)})\n` +
      (idles.length === 0
        ? ''
        : `node idle after a ${outageMs / 1000} s outage: at most ${idle.toFixed(2)} s (goal <= ${IDLE_GOAL_SECONDS} s: ${verdict(idle <= IDLE_GOAL_SECONDS)})\n`) +
      `ledger check: ${ledger === 0 ? 'every balance equals its ledger, each run charged once' : `${ledger} problem(s)`} (${verdict(ledger === 0)})\n` +
      (asRoot ? '' : 'full var/: skipped (mounting a tmpfs needs root)\n'),
  );
}

await main();

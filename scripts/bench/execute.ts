// Runs per second, their latency and their round trips to the database through svc-api and its nodes
// (docs/operations.md "Benchmarks"), each side measured in the same rounds as the others:
//   dispatch             a bare dispatch server (./dispatch-server.mjs): the same three exchanges a run makes
//                        (the execute held, the run handed to a long poll, the answer on the result), in memory
//   sqlite               svc-api on its default engine, a fresh data directory, one user
//   postgres             svc-api on a PostgreSQL server started for the bench (initdb in a temporary directory), one user
//   postgres N users     the same with --users users, the executes spread over them, each user with its node
//   postgres N users x2  two svc-api instances on one database, the executes alternating between them
//   sqlite-1M            (--recorded-runs) sqlite after that many finished runs, vs `sqlite`
//   … baseline           (--baseline-api) another build on each engine, one user, vs the same side of this build
// Every execute carries a new Idempotency-Key, so each one is a real run: accepted and debited, handed to the node
// by a poll, its result reported, then answered. The nodes are a stand-in that runs nothing (./stand-in-node.ts),
// so the figures are the service's own path. On PostgreSQL the server counts the statements of each burst
// (pg_stat_statements, ./pg-statements.ts): the round trips per run.
// Every program is its own process: each svc-api, the nodes, the dispatch server and the load generator
// (./execute-load.ts). Sides alternate in rounds whose order rotates; ratios are taken per round (paired) and their
// spread is printed, with the goals (./execute-report.ts). One run at a time (--solo) is interleaved
// run by run across the sides.
// Run with: npm run bench:execute -- [--rounds N] [--runs N] [--connections C] [--users N] [--engines sqlite,postgres]
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findAgentSku } from '../../src/contract/agents.js';
import { MAX_NODE_CONCURRENCY } from '../../src/contract/node-protocol.js';
import { startPostgresServer, type PostgresServer } from '../../test/helpers/postgres-server.js';
import type { BurstAnswer, BurstCommand, SoloAnswer, SoloCommand } from './execute-load.js';
import { report, type Measured, type SideResult } from './execute-report.js';
import { createStatementCounter, databaseCpuMilliseconds, STATEMENT_COUNTING_SETTINGS, type StatementCounter } from './pg-statements.js';
import { recordRuns } from './recorded-runs.js';
import type { StandInCommand, StandInCount } from './stand-in-node.js';
import { cpuMillisecondsOf, fundWallet, percentileOf, positiveInteger, signIn, startServerProcess } from './support.js';

declare const SCRIPT_DIR: string;
declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:execute -- [options]

  --rounds <n>          rounds; each measures every side once, in rotating order   default 6
  --runs <n>            runs (executes) per side per round                         default 1500
  --connections <n>     executes in flight at once                                 default 50
  --users <n>           users of the "postgres N users" sides; 1: no such sides     default 20
  --warmup <n>          unmeasured runs per side first                             default 500
  --engines <list>      sqlite, postgres or both                                   default sqlite,postgres
  --recorded-runs <n>   runs recorded before a sqlite-<n> side starts; 0: no such side   default 0
  --max-seconds <n>     cut a burst after this long                                default 60
  --dispatch-seconds <n> how long each burst of the dispatch server runs            default 3
  --solo <n>            runs one at a time per side, interleaved run by run across the sides,
                        after the rounds: a run's latency without queueing; 0: none   default 300
  --agent <agent_id>    the agent each execute runs                                default agent_ops_monitor_004
  --api <file>          the svc-api build the sides run                            default this checkout's bin/svc-api.js
  --baseline-api <file> another build's bin/svc-api.js, measured as one more side on each engine ("sqlite baseline",
                        "postgres baseline") in the same rounds: before/after a change (git worktree add ../base <rev>;
                        npm run build there)
  --cpu-prof <dir>      write a V8 CPU profile of each svc-api into <dir> (NO_MINIFY=1 npm run build first: names)
`;

/** The dispatch server answers thousands of runs a second: its bursts are cut by time, not by count. */
const UNBOUNDED = 1e9;

interface BenchUser {
  email: string;
  token: string;
  body: string;
  fundedCents: number;
  /** Executes of this user answered 200 so far: each must have been charged exactly once. */
  answered: number;
}

interface Side {
  name: string;
  kind: 'dispatch' | 'sqlite' | 'postgres';
  origins: string[];
  /** The svc-api processes: their CPU time per run is printed beside the rates (less at the mercy of other load). */
  pids: number[];
  users: BenchUser[];
  nodes: Child;
  /** PostgreSQL: the database, whose statements are counted. */
  database?: string;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '6' },
      runs: { type: 'string', default: '1500' },
      connections: { type: 'string', default: '50' },
      users: { type: 'string', default: '20' },
      warmup: { type: 'string', default: '500' },
      engines: { type: 'string', default: 'sqlite,postgres' },
      'recorded-runs': { type: 'string', default: '0' },
      'max-seconds': { type: 'string', default: '60' },
      'dispatch-seconds': { type: 'string', default: '3' },
      solo: { type: 'string', default: '300' },
      agent: { type: 'string', default: 'agent_ops_monitor_004' },
      api: { type: 'string', default: join(REPO_ROOT, 'bin/svc-api.js') },
      'cpu-prof': { type: 'string' },
      'baseline-api': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const rounds = positiveInteger(values.rounds, '--rounds');
  const runs = positiveInteger(values.runs, '--runs');
  const connections = positiveInteger(values.connections, '--connections');
  const userCount = positiveInteger(values.users, '--users');
  const warmup = positiveInteger(values.warmup, '--warmup');
  const maxSeconds = positiveInteger(values['max-seconds'], '--max-seconds');
  const dispatchSeconds = positiveInteger(values['dispatch-seconds'], '--dispatch-seconds');
  const solo = values.solo === '0' ? 0 : positiveInteger(values.solo, '--solo');
  const recorded = values['recorded-runs'] === '0' ? 0 : positiveInteger(values['recorded-runs'], '--recorded-runs');
  const engines = new Set(values.engines.split(',').map((engine) => engine.trim()));
  for (const engine of engines)
    if (engine !== 'sqlite' && engine !== 'postgres') throw new Error(`--engines: no engine ${engine} (sqlite, postgres)`);
  const sku = findAgentSku(values.agent);
  if (sku === undefined) throw new Error(`--agent: no agent ${values.agent}`);

  const scratch = mkdtempSync(join(tmpdir(), 'svc-bench-execute-'));
  const children: ChildProcess[] = [];
  let postgres: PostgresServer | undefined;
  let statements: StatementCounter | undefined;
  const load = new Child(
    fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'execute-load.ts')], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const sides: Side[] = [];
  const pollsPerNode = 4;
  try {
    const pids = new Map<string, number>();
    /** svc-api on `dataDir` (and the database SVC_DATABASE_URL names, if any): its origin. */
    const serveApi = async (
      dataDir: string,
      env: Record<string, string>,
      options: { bin?: string; port?: string; profile?: boolean } = {},
    ): Promise<string> => {
      // Every connection of the bench comes from 127.0.0.1: the cap is set above what the load and the nodes open.
      const cap = ['--max-connections-per-address', String(connections * 2 + userCount * pollsPerNode * 2 + 64)];
      const prof =
        options.profile === false || values['cpu-prof'] === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']];
      const args = [...prof, options.bin ?? values.api, '--port', options.port ?? '0', '--data-dir', dataDir, '--sandbox', ...cap];
      const started = await startServerProcess(args, { SVC_LOG_LEVEL: 'silent', ...env }, /svc-api listening on (\S+)/, children);
      pids.set(started.origin, started.pid);
      return started.origin;
    };
    /** `count` users signed in and funded for what the bench makes them run, each with a node on its instance. */
    const side = async (
      name: string,
      kind: Side['kind'],
      origins: string[],
      count: number,
      extra: Partial<Side> = {},
      prepare?: (users: BenchUser[]) => Promise<string[]>,
    ): Promise<Side> => {
      const perUser = Math.ceil(((rounds * runs + warmup) * 2 + solo * 2) / count) + 10;
      const users: BenchUser[] = [];
      for (let index = 0; index < count; index += 1) {
        const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
        const fundedCents = sku.price_cents * perUser;
        const token = kind === 'dispatch' ? `user-${index}` : await signIn(origins[0]!, email);
        if (kind !== 'dispatch') await fundWallet(origins[0]!, email, token, fundedCents);
        users.push({ email, token, body: JSON.stringify({ user_id: email, agent_id: sku.agent_id }), fundedCents, answered: 0 });
      }
      const serving = prepare === undefined ? origins : await prepare(users);
      const nodes = new Child(
        fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'stand-in-node.ts')], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
      );
      // A user's node polls one instance, as a daemon behind a balancer would: the users' nodes spread over them.
      const placed = users.map((user, index) => ({ api: serving[index % serving.length]!, token: user.token }));
      await nodes.ask<null>({
        op: 'start',
        nodes: placed,
        agentId: sku.agent_id,
        capacity: Math.min(connections, MAX_NODE_CONCURRENCY),
      } satisfies StandInCommand);
      return {
        name,
        kind,
        origins: serving,
        pids: serving.map((origin) => pids.get(origin) ?? 0).filter((pid) => pid !== 0),
        users,
        nodes,
        ...extra,
      };
    };

    if (engines.has('sqlite')) {
      process.stderr.write('starting svc-api on SQLite…\n');
      sides.push(await side('sqlite', 'sqlite', [await serveApi(join(scratch, 'sqlite'), {})], 1));
      const baseline = values['baseline-api'];
      if (baseline !== undefined)
        sides.push(await side('sqlite baseline', 'sqlite', [await serveApi(join(scratch, 'baseline'), {}, { bin: baseline })], 1));
      if (recorded > 0) {
        // The service is stopped while its file is written, and started again on it: its start is part of the case.
        const dataDir = join(scratch, 'recorded');
        const first = await serveApi(dataDir, {}, { profile: false });
        sides.push(
          await side(`sqlite-${recorded >= 1e6 ? `${recorded / 1e6}M` : recorded}`, 'sqlite', [first], 1, {}, async ([user]) => {
            const port = new URL(first).port;
            await stopServer(children.at(-1)!);
            process.stderr.write(`recording ${recorded} runs…\n`);
            recordRuns(join(dataDir, 'svc-api.db'), recorded, user!.email, sku.agent_id, sku.price_cents);
            return [await serveApi(dataDir, {}, { port })];
          }),
        );
      }
    }
    if (engines.has('postgres')) {
      process.stderr.write('starting PostgreSQL and svc-api on it…\n');
      postgres = await startPostgresServer({ durable: true, settings: STATEMENT_COUNTING_SETTINGS });
      statements = await createStatementCounter(postgres.adminUrl);
      const database = async (name: string, shared: boolean): Promise<Record<string, string>> => ({
        SVC_DATABASE_URL: await postgres!.createDatabase(name),
        // Instances behind one balancer share their keys (docs/operations.md "Several instances"), here from the environment.
        ...(shared ? { SVC_JWT_SECRET: randomBytes(32).toString('base64url') } : {}),
      });
      sides.push(
        await side('postgres', 'postgres', [await serveApi(join(scratch, 'pg-one'), await database('bench_one', false))], 1, {
          database: 'bench_one',
        }),
      );
      if (userCount > 1) {
        const many = `postgres ${userCount} users`;
        sides.push(
          await side(many, 'postgres', [await serveApi(join(scratch, 'pg-many'), await database('bench_many', false))], userCount, {
            database: 'bench_many',
          }),
        );
        const two = await database('bench_two', true);
        const origins = [await serveApi(join(scratch, 'pg-two-a'), two), await serveApi(join(scratch, 'pg-two-b'), two)];
        sides.push(await side(`${many} x2`, 'postgres', origins, userCount, { database: 'bench_two' }));
      }
      const baseline = values['baseline-api'];
      if (baseline !== undefined) {
        const before = await database('bench_baseline', false);
        sides.push(
          await side('postgres baseline', 'postgres', [await serveApi(join(scratch, 'pg-baseline'), before, { bin: baseline })], 1, {
            database: 'bench_baseline',
          }),
        );
      }
    }
    if (sides.length === 0) throw new Error('--engines named no engine');

    // One real response, so the dispatch server answers with exactly the bytes svc-api sends.
    const first = sides[0]!;
    const sample = await fetch(`${first.origins[0]}/v1/swarm/execute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${first.users[0]!.token}`, 'idempotency-key': randomUUID() },
      body: first.users[0]!.body,
    });
    const canned = await sample.text();
    if (sample.status !== 200) throw new Error(`the first execute answered ${sample.status}: ${canned}`);
    first.users[0]!.answered += 1;
    const dispatch = await startServerProcess(
      [join(SCRIPT_DIR, 'dispatch-server.mjs')],
      { BENCH_CANNED_RESPONSE: canned },
      /listening on (\S+)/,
      children,
    );
    pids.set(dispatch.origin, dispatch.pid);
    sides.unshift(await side('dispatch', 'dispatch', [dispatch.origin], 1));

    const burst = async (each: Side, count: number): Promise<BurstAnswer> => {
      const timed = each.kind === 'dispatch';
      const answer = await load.ask<BurstAnswer>({
        op: 'burst',
        origins: each.origins,
        users: each.users.map(({ token, body }) => ({ token, body })),
        count: timed ? UNBOUNDED : count,
        connections,
        maxSeconds: timed ? dispatchSeconds : maxSeconds,
      } satisfies BurstCommand);
      answer.answered.forEach((answered, index) => (each.users[index]!.answered += answered));
      return answer;
    };

    process.stderr.write(`warming up (${warmup} runs each)…\n`);
    for (const each of sides) await burst(each, warmup);

    const measured = new Map<string, Measured[]>(sides.map((each) => [each.name, []]));
    const statementsOf = new Map<string, { perRun: number; execMs: number; query: string }[]>();
    for (let round = 0; round < rounds; round += 1) {
      const shift = round % sides.length;
      const rotated = [...sides.slice(shift), ...sides.slice(0, shift)];
      process.stderr.write(`round ${round + 1}/${rounds}: ${rotated.map((each) => each.name).join(', ')}\n`);
      for (const each of rotated) {
        const cpu = (): number => each.pids.reduce((sum, pid) => sum + cpuMillisecondsOf(pid), 0);
        const before = await each.nodes.ask<StandInCount>({ op: 'count' } satisfies StandInCommand);
        if (each.database !== undefined) await statements!.reset();
        const cpuBefore = cpu();
        const databaseBefore = each.database === undefined ? 0 : databaseCpuMilliseconds();
        const answer = await burst(each, runs);
        const cpuMs = cpu() - cpuBefore;
        const databaseMs = each.database === undefined ? Number.NaN : databaseCpuMilliseconds() - databaseBefore;
        const counted = each.database === undefined ? undefined : await statements!.read(each.database);
        const after = await each.nodes.ask<StandInCount>({ op: 'count' } satisfies StandInCommand);
        const completed = Math.max(1, answer.completed);
        if (counted !== undefined)
          statementsOf.set(
            each.name,
            counted.top.map(({ calls, ...rest }) => ({ perRun: calls / completed, ...rest })),
          );
        const nodeExchanges = after.polls - before.polls + (after.results - before.results);
        const expected = each.kind === 'dispatch' ? answer.completed : runs;
        measured.get(each.name)!.push({
          runsPerSecond: answer.completed / answer.seconds,
          cpuMsPerRun: each.pids.length === 0 ? Number.NaN : cpuMs / completed,
          databaseCpuMsPerRun: databaseMs / completed,
          exchangesPerRun: 1 + nodeExchanges / completed,
          roundTripsPerRun: counted === undefined ? undefined : counted.total / completed,
          p50: percentileOf(answer.latencies, 0.5),
          p99: percentileOf(answer.latencies, 0.99),
          failures: answer.completed - (answer.statuses['200'] ?? 0) + (expected - answer.completed),
        });
      }
    }
    // One at a time, interleaved run by run across the sides: a run's latency when it waits behind no other (at 50 in
    // flight, p50 is about 50 / runs per second, by Little's law, whatever the path).
    const alone = new Map<string, number[]>();
    if (solo > 0) {
      process.stderr.write(`one run at a time (${solo} each, interleaved)…\n`);
      const answer = await load.ask<SoloAnswer>({
        op: 'solo',
        targets: sides.map((each) => ({ origin: each.origins[0]!, token: each.users[0]!.token, body: each.users[0]!.body })),
        count: solo,
      } satisfies SoloCommand);
      sides.forEach((each, index) => {
        alone.set(each.name, answer.latencies[index]!);
        each.users[0]!.answered += answer.answered[index]!;
      });
    }
    const ledger = await Promise.all(sides.map((each) => ledgerCheck(each, sku.price_cents)));
    const results: SideResult[] = sides.map((each) => ({
      name: each.name,
      kind: each.kind,
      users: each.users.length,
      rounds: measured.get(each.name)!,
      alone: alone.get(each.name),
      statements: statementsOf.get(each.name),
    }));
    process.stdout.write(
      report({ sides: results, ledger, connections, runs, rounds, userCount, agent: `${sku.agent_id} (${sku.price_cents} cents a run)` }),
    );
    if (ledger.some((line) => !line.ok) || results.some((each) => each.rounds.some((round) => round.failures > 0))) process.exitCode = 1;
  } finally {
    await Promise.all(sides.map((each) => each.nodes.ask({ op: 'stop' } satisfies StandInCommand, false)));
    await load.ask({ op: 'exit' }, false);
    await Promise.all(children.map(stopServer));
    await statements?.close();
    postgres?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Every run charged once: each user's balance is what was funded less one price per run answered 200. */
async function ledgerCheck(side: Side, priceCents: number): Promise<{ name: string; ok: boolean; line: string }> {
  if (side.kind === 'dispatch') return { name: side.name, ok: true, line: `${side.name}: no books (a run costs nothing there)` };
  let charged = 0;
  let answered = 0;
  const wrong: string[] = [];
  for (const user of side.users) {
    const headers = { authorization: `Bearer ${user.token}` };
    const wallet = (await (await fetch(`${side.origins[0]}/v1/swarm/wallet`, { headers })).json()) as { balance_cents: number };
    const cents = user.fundedCents - wallet.balance_cents;
    charged += cents;
    answered += user.answered;
    if (cents !== user.answered * priceCents) wrong.push(`${user.email}: ${cents} cents charged for ${user.answered} runs answered 200`);
  }
  const users = side.users.length === 1 ? '' : ` over ${side.users.length} users`;
  const verdict =
    wrong.length === 0
      ? `one charge per run answered 200${side.users.length === 1 ? '' : ', for each user'}`
      : `MISMATCH: ${wrong.join('; ')}`;
  return {
    name: side.name,
    ok: wrong.length === 0,
    line: `${side.name}: ${answered} runs answered 200, ${charged / priceCents} runs charged${users}, ${charged} cents: ${verdict}`,
  };
}

function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  return exited;
}

/** A forked helper spoken to one command at a time over IPC. */
class Child {
  readonly #process: ChildProcess;

  constructor(child: ChildProcess) {
    this.#process = child;
  }

  ask<T>(command: unknown, answered = true): Promise<T> {
    if (!this.#process.connected) return Promise.resolve(undefined as T);
    if (!answered) {
      const gone = new Promise<T>((resolve) => this.#process.once('exit', () => resolve(undefined as T)));
      this.#process.send(command as object);
      return gone;
    }
    return new Promise((resolve, reject) => {
      this.#process.once('message', (message: { ok: boolean; answer?: T; error?: string }) =>
        message.ok ? resolve(message.answer as T) : reject(new Error(message.error)),
      );
      this.#process.send(command as object);
    });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench:execute: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

// What scripts/bench/faults.ts drives: svc-api instances (killed and started again on their port), real swarm-node
// daemons with an agent that records when it starts and ends, and the service's books read on either engine.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { startServerProcess, swarmNode, until } from './support.js';

declare const REPO_ROOT: string;

export { LIBFAKETIME } from '../../test/helpers/faketime.js';

/** One svc-api process; `restart` starts it again on the same port and data directory. */
export class ApiInstance {
  origin = '';
  #child: ChildProcess | undefined;
  readonly #children: ChildProcess[];

  constructor(
    readonly dataDir: string,
    readonly env: Record<string, string>,
    readonly args: string[],
    children: ChildProcess[],
  ) {
    this.#children = children;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    const port = this.origin === '' ? '0' : new URL(this.origin).port;
    const bin = join(REPO_ROOT, 'bin', 'svc-api.js');
    const args = [bin, '--port', port, '--data-dir', this.dataDir, '--sandbox', '--max-connections-per-address', '4096', ...this.args];
    const started = await startServerProcess(args, { SVC_LOG_LEVEL: 'silent', ...this.env }, /svc-api listening on (\S+)/, this.#children);
    this.origin = started.origin;
    this.#child = this.#children.find((child) => child.pid === started.pid);
  }

  /** SIGKILL, and the exit seen: the port is free again. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** The bench's agent: records its start and end beside the node, answers `{}` after `delayMs`. */
function agentProgram(delayMs: number): string {
  return `import { appendFileSync } from 'node:fs';
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const run = JSON.parse(input);
  const record = (event) => appendFileSync(process.env.SWARM_NODE_HOME + '/bench-events.log', JSON.stringify({ event, run_id: run.run_id, at: Date.now() }) + '\\n');
  record('start');
  setTimeout(() => {
    record('end');
    process.stdout.write('{}');
  }, ${delayMs});
});
`;
}

export interface AgentEvent {
  event: 'start' | 'end';
  run_id: string;
  at: number;
}

/** A node of its own home, enrolled for the user, serving `agents`, its daemon a process of its own. */
export class BenchNode {
  readonly env: NodeJS.ProcessEnv;
  nodeId = '';
  daemon: ChildProcess | undefined;
  readonly lines: string[] = [];

  constructor(
    readonly home: string,
    api: string,
    concurrency: number,
  ) {
    // The runs' own users (isolation uid, as root) are not what this bench measures: agents run as the daemon.
    this.env = {
      ...process.env,
      SWARM_NODE_HOME: home,
      SVC_BASE_URL: api,
      NO_COLOR: '1',
      SWARM_AGENT_ISOLATION: 'none',
      SWARM_NODE_CONCURRENCY: String(concurrency),
    };
  }

  /** Signed in with the user's JWT, enrolled, the agents installed (answering after `delayMs`) and registered. */
  enroll(token: string, agents: string[], inputs: Record<string, Record<string, string>>, delayMs: number): void {
    mkdirSync(this.home, { recursive: true });
    swarmNode(['login', '--token-stdin'], this.env, `${token}\n`);
    swarmNode(['enroll'], this.env);
    for (const agent of agents) {
      const dir = join(this.home, 'agents', agent);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      writeFileSync(
        join(dir, 'agent.json'),
        JSON.stringify({ agent_id: agent, version: '0.0.0-bench', entry: ['node', 'main.mjs'], input_schema: { type: 'object' } }),
      );
      writeFileSync(join(dir, 'main.mjs'), agentProgram(delayMs));
      swarmNode(
        ['register', agent, ...Object.entries(inputs[agent] ?? {}).flatMap(([key, value]) => ['--input', `${key}=${value}`])],
        this.env,
      );
    }
    const status = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), '--json', 'status'], {
      env: this.env,
      encoding: 'utf8',
    });
    this.nodeId = (JSON.parse(status.stdout) as { node: { node_id: string } }).node.node_id;
  }

  /** The daemon started; resolves once it has told the service which agents it serves. */
  async start(children: ChildProcess[], log: string): Promise<void> {
    const daemon = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'swarm-node.js'), 'daemon'], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(daemon);
    this.daemon = daemon;
    let partial = '';
    daemon.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      appendFileSync(log, chunk);
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      this.lines.push(...lines);
    });
    daemon.stderr!.setEncoding('utf8').on('data', (chunk: string) => appendFileSync(log, chunk));
    await until(async () => this.lines.some((line) => line.includes('event=agents_served')), 'the daemon to serve its agents', 30_000);
  }

  signal(signal: NodeJS.Signals): void {
    this.daemon?.kill(signal);
  }

  async stop(): Promise<void> {
    const daemon = this.daemon;
    if (daemon === undefined || daemon.exitCode !== null || daemon.signalCode !== null) return;
    const exited = new Promise((resolve) => daemon.once('exit', resolve));
    daemon.kill('SIGCONT');
    daemon.kill('SIGTERM');
    await exited;
  }

  events(): AgentEvent[] {
    const file = join(this.home, 'bench-events.log');
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AgentEvent);
  }
}

export interface RunRow {
  run_id: string;
  status: string;
  charged_cents: number;
  node_id: string | null;
  attempt: number;
  claimed_at: number | null;
  finished_at: number | null;
  finished_by: string | null;
  output_json: string | null;
}

export interface LedgerRow {
  kind: string;
  amount_cents: number;
  run_id: string | null;
}

/** The service's tables, read the same way on SQLite (its file) and PostgreSQL (its database). */
export interface Books {
  runs(email: string): Promise<RunRow[]>;
  ledger(email: string): Promise<LedgerRow[]>;
  balance(email: string): Promise<number>;
  /** Each run's attempts that ended, and how (node_lost, not_started). */
  attempts(email: string): Promise<{ run_id: string; attempt: number; node_id: string | null; error: string }[]>;
  close(): Promise<void>;
}

const RUNS_SQL =
  'SELECT run_id, status, charged_cents, node_id, attempt, claimed_at, finished_at, finished_by, output_json FROM runs WHERE user_id = ?';
const LEDGER_SQL = 'SELECT kind, amount_cents, run_id FROM ledger_entries WHERE user_id = ? ORDER BY entry_id';
const BALANCE_SQL = 'SELECT balance_cents FROM wallets WHERE user_id = ?';
const ATTEMPTS_SQL =
  'SELECT a.run_id, a.attempt, a.node_id, a.error FROM run_attempts a JOIN runs r ON r.run_id = a.run_id WHERE r.user_id = ?';

export function sqliteBooks(dataDir: string): Books {
  const file = join(dataDir, 'svc-api.db');
  const read = <T>(sql: string, email: string): T[] => {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all(email.toLowerCase()) as T[];
    } finally {
      db.close();
    }
  };
  return {
    runs: async (email) => read<RunRow>(RUNS_SQL, email),
    ledger: async (email) => read<LedgerRow>(LEDGER_SQL, email),
    balance: async (email) => read<{ balance_cents: number }>(BALANCE_SQL, email)[0]?.balance_cents ?? 0,
    attempts: async (email) => read(ATTEMPTS_SQL, email),
    close: async () => undefined,
  };
}

export function postgresBooks(url: string): Books {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const read = async <T>(sql: string, email: string): Promise<T[]> => {
    const { rows } = await pool.query(sql.replace('?', '$1'), [email.toLowerCase()]);
    // bigint columns come back as text: the books are figures.
    return rows.map((row: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(row).map(([key, value]) => [
          key,
          typeof value === 'string' && /^-?\d+$/.test(value) && key !== 'run_id' && key !== 'node_id' ? Number(value) : value,
        ]),
      ),
    ) as T[];
  };
  return {
    runs: (email) => read<RunRow>(RUNS_SQL, email),
    ledger: (email) => read<LedgerRow>(LEDGER_SQL, email),
    balance: async (email) => (await read<{ balance_cents: number }>(BALANCE_SQL, email))[0]?.balance_cents ?? 0,
    attempts: (email) => read(ATTEMPTS_SQL, email),
    close: () => pool.end(),
  };
}

/**
 * The ledger check of one user: the balance is its entries' sum, each run debited once, refunded at most once and
 * only when it failed, the cents kept equal the prices of the runs that succeeded, and no run left queued or running.
 * The problems found (none: it holds).
 */
export async function ledgerProblems(books: Books, email: string): Promise<string[]> {
  const [runs, entries, balance] = await Promise.all([books.runs(email), books.ledger(email), books.balance(email)]);
  const problems: string[] = [];
  const sum = entries.reduce((total, entry) => total + (entry.kind === 'debit' ? -entry.amount_cents : entry.amount_cents), 0);
  if (sum !== balance) problems.push(`${email}: balance ${balance} but its entries sum to ${sum}`);
  const byRun = new Map<string, string[]>();
  for (const entry of entries) if (entry.run_id !== null) byRun.set(entry.run_id, [...(byRun.get(entry.run_id) ?? []), entry.kind]);
  for (const run of runs) {
    const kinds = byRun.get(run.run_id) ?? [];
    if (kinds.filter((kind) => kind === 'debit').length !== 1)
      problems.push(`run ${run.run_id} debited ${kinds.filter((kind) => kind === 'debit').length} times`);
    const refunds = kinds.filter((kind) => kind === 'refund').length;
    // Every run costs something here: one that failed is refunded once, one that succeeded never.
    if (refunds !== (run.status === 'failed' ? 1 : 0)) problems.push(`run ${run.run_id} (${run.status}) refunded ${refunds} times`);
    if (run.status === 'queued' || run.status === 'running') problems.push(`run ${run.run_id} left ${run.status}`);
  }
  const kept = entries
    .filter((entry) => entry.run_id !== null)
    .reduce((total, entry) => total + (entry.kind === 'debit' ? entry.amount_cents : entry.kind === 'refund' ? -entry.amount_cents : 0), 0);
  const succeeded = runs.filter((run) => run.status === 'succeeded').reduce((total, run) => total + run.charged_cents, 0);
  if (kept !== succeeded) problems.push(`${email}: ${kept} cents kept for runs, but the runs that succeeded cost ${succeeded}`);
  return problems;
}

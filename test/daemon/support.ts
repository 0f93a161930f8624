// The daemon under test: the built package (staged once per file, so a rebuild by someone else cannot pull it away)
// in its own process against a real svc-api, its stdout read as logfmt events; and the ledger check that every
// daemon test ends with: what the service charged equals what the node journaled, one run per charge.
import Database from 'better-sqlite3';
import { execa, type ResultPromise } from 'execa';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, expect } from 'vitest';
import { findAgentSku } from '../../src/contract/agents.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { openNodeStore } from '../../src/node/store/database.js';
import { getRegistration, upsertRegistration } from '../../src/node/store/registrations.js';
import { parseDuration } from '../../src/node/agents/duration.js';
import { nodeEnv, runProgram, type CliResult, type NodeEnv } from '../helpers/cli.js';
import { CONTRACT_INPUTS, contractInputFlags } from '../helpers/bundles.js';
import { fundWallet, signIn, waitFor } from '../helpers/funnel.js';
import { httpRequest, type ApiResponse } from '../helpers/http.js';
import { uniqueEmail } from '../helpers/temp.js';
import { stagedOnPath, stagedPackage } from '../install/support.js';
import { installTestAgents, type AgentBehaviour } from './agents.js';

/** Fast ticks and short backoffs, so a test sees in seconds what a node does in minutes. */
export const FAST = ['--tick-ms', '100', '--backoff-ms', '400'];

export function swarmNodeBin(): string {
  return join(stagedPackage(), 'bin', 'swarm-node.js');
}

export function cli(node: NodeEnv, args: string[], input?: string): Promise<CliResult> {
  // The staged package on the PATH, as installed: what it prints names it bare (src/lib/program-word.ts).
  const env = { PATH: `${stagedOnPath()}:${process.env.PATH ?? '/usr/bin:/bin'}`, ...node.env };
  return runProgram('node', [swarmNodeBin(), ...args], { env, ...(input === undefined ? {} : { input }) });
}

export interface TestNode extends NodeEnv {
  email: string;
  token: string;
  databaseFile: string;
}

/**
 * A paid user, its wallet funded, its JWT stored by `login --token-stdin`, this home enrolled as its node (unless
 * `enroll: false`), and a test bundle of every catalog agent in its home: `agents` names the slow or held ones
 * (./agents.ts), the others answer at once.
 */
export async function signedInNode(
  baseUrl: string,
  options: {
    fundCents?: number;
    label?: string;
    token?: string;
    email?: string;
    enroll?: boolean;
    agents?: Record<string, AgentBehaviour>;
  } = {},
): Promise<TestNode> {
  const email = options.email ?? uniqueEmail(options.label ?? 'daemon');
  const token = options.token ?? (await signIn(baseUrl, email));
  if (options.fundCents !== undefined && options.fundCents > 0) await fundWallet(baseUrl, email, options.fundCents);
  const node = nodeEnv(baseUrl);
  installTestAgents(node, options.agents);
  const login = await cli(node, ['login', '--token-stdin'], `${token}\n`);
  expect(login.exitCode, login.stderr).toBe(0);
  if (options.enroll !== false) {
    const enroll = await cli(node, ['enroll']);
    expect(enroll.exitCode, enroll.stderr).toBe(0);
  }
  return { ...node, email, token, databaseFile: join(node.home, 'var', 'swarm-node.db') };
}

/** `swarm-node register`; the scheduled runs start from an input the agent's schema accepts unless `options` give one. */
/**
 * `swarm-node register`; with `--every`, an interval the daemon keeps itself, as a release before schedules at the
 * service registered one (register --every now makes a schedule at the service, at most once a minute): these
 * tests are of the daemon's own schedule, and of its runs at seconds apart.
 */
export async function register(node: NodeEnv, agent: string, ...options: string[]): Promise<void> {
  const input = options.includes('--input') || options.includes('--input-file') ? [] : contractInputFlags(agent);
  const every = options.indexOf('--every');
  if (every === -1 || options[every + 1] === 'none') {
    const result = await cli(node, ['register', agent, ...options, ...input]);
    expect(result.exitCode, result.stderr).toBe(0);
    return;
  }
  const rest = options.filter((_, index) => index !== every && index !== every + 1);
  const result = await cli(node, ['register', agent, ...rest, ...input]);
  expect(result.exitCode, result.stderr).toBe(0);
  const db = openNodeStore(join(node.home, 'var', 'swarm-node.db'));
  try {
    upsertRegistration(
      db,
      { ...getRegistration(db, agent)!, every_seconds: parseDuration(options[every + 1]!), schedule_id: null },
      Date.now(),
    );
  } finally {
    db.close();
  }
}

export type LogEvent = Record<string, string>;

/** One logfmt line: key=value, values bare or JSON strings. */
export function parseLogLine(line: string): LogEvent {
  const event: LogEvent = {};
  for (const match of line.matchAll(/([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    const raw = match[2]!;
    event[match[1]!] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return event;
}

/** Daemons a test started and did not stop: a failing test must not leave one running into the next. */
const running = new Set<DaemonProcess>();
afterEach(async () => {
  const left = [...running];
  running.clear();
  await Promise.all(left.map((daemon) => daemon.stop('SIGKILL')));
});

export class DaemonProcess {
  readonly child: ResultPromise;
  readonly lines: string[] = [];
  stderr = '';

  private constructor(child: ResultPromise) {
    this.child = child;
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      partial += chunk.toString();
      const complete = partial.split('\n');
      partial = complete.pop()!;
      this.lines.push(...complete);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
  }

  /** `bin`: another swarm-node to run (an installed release's); the staged package's by default. */
  static start(node: NodeEnv, args: string[] = FAST, bin: string = swarmNodeBin()): DaemonProcess {
    const child = execa('node', [bin, 'daemon', ...args], {
      env: node.env,
      extendEnv: true,
      reject: false,
      stdin: 'ignore',
      buffer: false,
    });
    const daemon = new DaemonProcess(child);
    running.add(daemon);
    void child.finally(() => running.delete(daemon));
    return daemon;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get output(): string {
    return this.lines.join('\n');
  }

  events(name?: string): LogEvent[] {
    return this.lines.map(parseLogLine).filter((event) => name === undefined || event.event === name);
  }

  async waitForEvent(name: string, predicate: (event: LogEvent) => boolean = () => true, timeoutMs = 10_000): Promise<LogEvent> {
    return waitFor(
      async () => this.events(name).find(predicate),
      `event ${name} from the daemon (log so far:\n${this.output}\n${this.stderr})`,
      timeoutMs,
    );
  }

  async waitForCount(name: string, count: number, timeoutMs = 10_000): Promise<LogEvent[]> {
    return waitFor(
      async () => {
        const events = this.events(name);
        return events.length >= count ? events : undefined;
      },
      `${count} ${name} events (log so far:\n${this.output}\n${this.stderr})`,
      timeoutMs,
    );
  }

  /** Sends the signal and waits for the exit; the exit code, or the signal's name when it was killed. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string> {
    this.child.kill(signal);
    const result = await this.child;
    return result.exitCode ?? result.signal ?? -1;
  }
}

/** The service's request log (pino JSON lines), to count execute calls: a 402 leaves no row anywhere else. */
export class RequestLog extends Writable {
  readonly entries: { route?: string; status?: number }[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() === '') continue;
      try {
        this.entries.push(JSON.parse(line) as { route?: string; status?: number });
      } catch {
        // not a request line
      }
    }
    done();
  }

  executes(status?: number): number {
    return this.entries.filter((entry) => entry.route === '/v1/swarm/execute' && (status === undefined || entry.status === status)).length;
  }
}

/** The daemon's last recorded tick (daemon_state.last_tick_at) in epoch ms; undefined before its first. */
export function lastTickAt(node: TestNode): number | undefined {
  const db = new Database(node.databaseFile, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare<[], { value: string }>(`SELECT value FROM daemon_state WHERE key = 'last_tick_at'`).get();
    return row === undefined ? undefined : Date.parse(row.value);
  } finally {
    db.close();
  }
}

/**
 * Waits until the daemon has finished `count` ticks begun at `fromMs` or later (its clock is this host's). A tick
 * reads the registrations, schedules and journal, and journals every run it starts before it ends, so whatever the
 * daemon does about the state at `fromMs` is in the database then: how a test shows that something did not happen
 * without sleeping. Ticks run one after another, so a tick is over once a later one has begun.
 */
export async function waitForTicksDone(node: TestNode, count: number, fromMs = Date.now(), timeoutMs = 15_000): Promise<void> {
  const seen = new Set<number>();
  await waitFor(
    async () => {
      const tick = lastTickAt(node);
      if (tick !== undefined && tick >= fromMs) seen.add(tick);
      return seen.size > count ? true : undefined;
    },
    `the daemon to finish ${count} tick(s) begun after ${new Date(fromMs).toISOString()}`,
    timeoutMs,
  );
}

export function nodeDb(node: TestNode): SqliteDatabase {
  return openNodeStore(node.databaseFile);
}

export interface LocalRun {
  idempotency_key: string;
  agent_id: string;
  status: string;
  run_id: string | null;
  charged_cents: number;
  started_at: number;
  finished_at: number | null;
}

export function localRuns(node: TestNode, agentId?: string): LocalRun[] {
  const db = nodeDb(node);
  try {
    const rows = db
      .prepare<[], LocalRun>(
        'SELECT idempotency_key, agent_id, status, run_id, charged_cents, started_at, finished_at FROM runs ORDER BY started_at',
      )
      .all();
    return agentId === undefined ? rows : rows.filter((row) => row.agent_id === agentId);
  } finally {
    db.close();
  }
}

/**
 * Exactly once: the cents the service charged this user (debits minus refunds) equal the cents the node journaled,
 * every service run is one journaled run and the other way round, and nothing is left pending or running.
 */
export function expectExactlyOnce(serviceDb: SqliteDatabase, node: TestNode): { runs: number; cents: number } {
  const user = node.email.toLowerCase();
  const charged = chargedCents(serviceDb, user);
  const atService = serviceRuns(serviceDb, user);
  const local = localRuns(node);
  expect(
    local.filter((run) => run.status === 'pending'),
    'no journal row left pending',
  ).toEqual([]);
  expect(
    atService.filter((run) => run.status === 'running'),
    'no run left running at the service',
  ).toEqual([]);
  const localCents = local.reduce((sum, run) => sum + run.charged_cents, 0);
  expect(localCents, 'cents journaled == cents charged').toBe(charged);
  const localRunIds = local
    .map((run) => run.run_id)
    .filter((id): id is string => id !== null)
    .sort();
  expect(localRunIds, 'one journaled run per service run').toEqual(atService.map((run) => run.run_id).sort());
  return { runs: atService.length, cents: charged };
}

/** The cents the service charged this user: debits minus refunds. */
export function chargedCents(serviceDb: SqliteDatabase, email: string): number {
  return serviceDb
    .prepare<[string], { cents: number }>(
      `SELECT COALESCE(SUM(CASE kind WHEN 'debit' THEN amount_cents ELSE -amount_cents END), 0) AS cents
       FROM ledger_entries WHERE user_id = ? AND kind IN ('debit', 'refund')`,
    )
    .get(email.toLowerCase())!.cents;
}

export interface ServiceRun {
  run_id: string;
  agent_id: string;
  status: string;
  charged_cents: number;
  finished_by: string | null;
  node_id: string | null;
  output_json: string | null;
}

export function serviceRuns(serviceDb: SqliteDatabase, email: string): ServiceRun[] {
  return serviceDb
    .prepare<[string], ServiceRun>(
      'SELECT run_id, agent_id, status, charged_cents, finished_by, node_id, output_json FROM runs WHERE user_id = ? ORDER BY started_at',
    )
    .all(email.toLowerCase());
}

/**
 * The billing invariant (docs/decisions/0008-execute-debits-atomically.md), whoever started the runs (the node's
 * schedules, curl with the JWT): the cents charged equal the sum of the prices of the runs a node reported
 * succeeded, no run is still queued or running, and no run was debited or refunded twice.
 */
export function expectChargedForNodeResults(serviceDb: SqliteDatabase, email: string): { runs: number; succeeded: number; cents: number } {
  const runs = serviceRuns(serviceDb, email);
  expect(
    runs.filter((run) => run.status === 'queued' || run.status === 'running'),
    'no run left queued or running',
  ).toEqual([]);
  const succeeded = runs.filter((run) => run.status === 'succeeded');
  expect(
    succeeded.every((run) => run.finished_by === 'node'),
    'only a node finishes a run succeeded',
  ).toBe(true);
  const prices = succeeded.reduce((sum, run) => sum + findAgentSku(run.agent_id)!.price_cents, 0);
  const cents = chargedCents(serviceDb, email);
  expect(cents, 'cents charged == prices of the runs a node reported succeeded').toBe(prices);
  const twice = serviceDb
    .prepare<[string], { run_id: string; kind: string; n: number }>(
      `SELECT run_id, kind, COUNT(*) AS n FROM ledger_entries WHERE user_id = ? AND run_id IS NOT NULL GROUP BY run_id, kind HAVING n > 1`,
    )
    .all(email.toLowerCase());
  expect(twice, 'no run debited or refunded twice').toEqual([]);
  return { runs: runs.length, succeeded: succeeded.length, cents };
}

/** POST /v1/swarm/execute as any client with the user's JWT would send it (curl from a laptop). */
export function executeOverHttp(
  baseUrl: string,
  node: TestNode,
  agentId: string,
  options: { input?: Record<string, unknown>; prefer?: string; key?: string; timeoutSeconds?: number } = {},
): Promise<ApiResponse> {
  return httpRequest(`${baseUrl}/v1/swarm/execute`, {
    method: 'POST',
    token: node.token,
    body: {
      user_id: node.email,
      agent_id: agentId,
      input: options.input ?? CONTRACT_INPUTS[agentId] ?? {},
      ...(options.timeoutSeconds === undefined ? {} : { timeout_seconds: options.timeoutSeconds }),
    },
    headers: { 'idempotency-key': options.key ?? randomUUID(), ...(options.prefer === undefined ? {} : { prefer: options.prefer }) },
  });
}

/** Waits until the service counts the node online and serving `agentId` (it polled after the daemon synced it). */
export async function waitUntilServing(baseUrl: string, node: TestNode, agentId: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () => {
      const fleet = await httpRequest<{ nodes: { online: boolean; agents: string[] }[] }>(`${baseUrl}/v1/swarm/nodes`, {
        token: node.token,
      });
      return fleet.body.nodes?.some((entry) => entry.online && entry.agents.includes(agentId)) ? true : undefined;
    },
    `the node online and serving ${agentId}`,
    timeoutMs,
  );
}

/** A run as its user sees it (GET /v1/swarm/runs/{run_id}), held up to `wait` seconds for it to end. */
export function runOf(baseUrl: string, node: TestNode, runId: string, wait = 10): Promise<ApiResponse> {
  return httpRequest(`${baseUrl}/v1/swarm/runs/${runId}?wait=${wait}`, { token: node.token });
}

/** The run once it has ended: succeeded, failed or cancelled. */
export async function runEnded(baseUrl: string, node: TestNode, runId: string, timeoutMs = 30_000): Promise<ApiResponse['body']> {
  return waitFor(
    async () => {
      const run = await runOf(baseUrl, node, runId);
      return ['succeeded', 'failed', 'cancelled'].includes(run.body.status) ? run.body : undefined;
    },
    `run ${runId} to end`,
    timeoutMs,
  );
}

/** The kinds of one run's ledger entries, in order: its debit, and its refund when it was given back. */
export function ledgerKindsOf(serviceDb: SqliteDatabase, runId: string): string[] {
  return serviceDb
    .prepare<[string], { kind: string }>('SELECT kind FROM ledger_entries WHERE run_id = ? ORDER BY entry_id')
    .all(runId)
    .map((row) => row.kind);
}

// The scheduler inside svc-api (docs/operations.md "Benchmarks"): its idle CPU holding 10,000 schedules, and how late
// occurrences fire when many come due at once. Two built svc-api processes on fresh data dirs, a baseline with no
// schedules and one with them, sampled in the same rounds in rotating order, so that what the machine does
// meanwhile weighs on both alike; the ratio of their CPU each round is the figure, with its spread. Then the
// schedules' service fires a burst: a share of them every minute on the minute (intervals count from the epoch),
// and each occurrence's lateness is its run's start minus its fire time, as the service records both. The runs are
// pinned to a node of the user that never polls, so they are queued for it and charged, as runs of a node away are.
// The schedules are written into the service's SQLite file directly, past the 200 a user the API allows: the bench
// is about the scheduler's rounds, not about making schedules. They are of one signed-in, funded user.
// Run with: npm run bench:scheduler -- [--schedules N] [--burst N] [--rounds N] [--seconds S]
import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import {
  cpuMillisecondsOf,
  fundWallet,
  median,
  payAndConfirm,
  percentileOf,
  positiveInteger,
  signIn,
  spreadLine,
  SPREAD_LIMIT,
  startServerProcess,
  table,
  until,
} from './support.js';

declare const REPO_ROOT: string;

const USAGE = `Usage: npm run bench:scheduler -- [options]

  --schedules <n>   schedules held by the measured service        default 10000
  --burst <n>       of them, firing every minute on the minute    default 1000
  --rounds <n>      idle rounds, each sampling both services      default 6
  --seconds <s>     each sample's length                          default 10
  --minutes <n>     minutes of bursts whose lateness is measured  default 3`;

/** The goal: an occurrence claimed within a second of its time, at the 99th percentile. */
const LATENESS_GOAL_MS = 1000;
const AGENT = 'agent_ops_monitor_004';
const PRICE_CENTS = 4;
const MINUTE = 60_000;

const { values } = parseArgs({
  options: {
    schedules: { type: 'string', default: '10000' },
    burst: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '10' },
    minutes: { type: 'string', default: '3' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const schedules = positiveInteger(values.schedules, '--schedules');
const burst = Math.min(positiveInteger(values.burst, '--burst'), schedules);
const rounds = positiveInteger(values.rounds, '--rounds');
const seconds = positiveInteger(values.seconds, '--seconds');
const minutes = positiveInteger(values.minutes, '--minutes');

interface Service {
  api: string;
  pid: number;
  db: Database.Database;
  email: string;
  /** A node of the user that serves the agent and never polls: the bursts' runs are queued for it, charged. */
  nodeId: string;
}

async function call(
  api: string,
  method: string,
  path: string,
  bearer: string | undefined,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}

/** The funnel's purchase, activation and enrolment: a node of the user serving the agent. */
async function enrolledNode(api: string, email: string, token: string): Promise<string> {
  const session = await call(api, 'POST', '/v1/swarm/paygate/session', undefined, { tier_id: 'svc_starter_agents', user_id: email });
  const paymentId = await payAndConfirm(api, { offer_id: 'svc_starter_agents', customer_email: email });
  const activation = await call(api, 'POST', '/v1/swarm/paygate/activate', token, {
    session_id: session.session_id,
    payment_id: paymentId,
  });
  const enrolled = await call(api, 'POST', '/v1/swarm/nodes/enroll', activation.deploy_token as string);
  await call(api, 'PUT', `/v1/swarm/nodes/self/agents/${AGENT}`, enrolled.node_credential as string);
  return enrolled.node_id as string;
}

const scratch = mkdtempSync(join(tmpdir(), 'bench-scheduler-'));
const children: ChildProcess[] = [];
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

async function startService(name: string): Promise<Service> {
  const dataDir = join(scratch, name);
  const { origin, pid } = await startServerProcess(
    [join(REPO_ROOT, 'bin', 'svc-api.js'), '--port', '0', '--data-dir', dataDir, '--sandbox', '--max-connections-per-address', '1024'],
    { SVC_LOG_LEVEL: 'silent' },
    /svc-api listening on (\S+)/,
    children,
  );
  const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
  const token = await signIn(origin, email);
  await fundWallet(origin, email, token, burst * (minutes + 2) * PRICE_CENTS);
  const nodeId = await enrolledNode(origin, email, token);
  return { api: origin, pid, db: new Database(join(dataDir, 'svc-api.db')), email, nodeId };
}

/** `count` schedules of the user that fire no sooner than a year from now: the idle load, rows the rounds look past. */
function addIdleSchedules(service: Service, count: number): void {
  const now = Date.now();
  const insert = service.db.prepare(
    `INSERT INTO schedules (schedule_id, user_id, agent_id, input_json, cron, interval_seconds, time_zone, overlap, catch_up_seconds,
       node_id, labels_json, daily_cap_cents, pause_after_failures, paused, next_fire_at, anchor_at, created_at, updated_at)
     VALUES (?, ?, ?, NULL, ?, NULL, 'Europe/Berlin', 'skip', 0, NULL, '[]', NULL, NULL, 0, ?, 0, ?, ?)`,
  );
  const nextYear = new Date(new Date(now).getUTCFullYear() + 1, 0, 1, 9).getTime();
  service.db.transaction(() => {
    for (let i = 0; i < count; i += 1) insert.run(randomUUID(), service.email, AGENT, '0 9 1 1 *', nextYear, now, now);
  })();
}

/** Turns `count` of the schedules into every-minute intervals, due at the next minute. */
function startBurst(service: Service, count: number): number {
  const next = Math.ceil((Date.now() + 5000) / MINUTE) * MINUTE;
  service.db
    .prepare(
      `UPDATE schedules SET cron = NULL, interval_seconds = 60, overlap = 'allow', node_id = ?, next_fire_at = ?
       WHERE schedule_id IN (SELECT schedule_id FROM schedules ORDER BY schedule_id LIMIT ?)`,
    )
    .run(service.nodeId, next, count);
  return next;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const [baseline, measured] = [await startService('baseline'), await startService('measured')];
  addIdleSchedules(measured, schedules);
  process.stdout.write(
    `scheduler bench: ${schedules} schedules, ${rounds} rounds of ${seconds} s, then ${minutes} minute(s) of a burst of ${burst}\n`,
  );

  // Idle: each round samples both, in rotating order, for the same length.
  const ratios: number[] = [];
  const rows: string[][] = [['round', 'baseline CPU', `${schedules} schedules CPU`, 'ratio']];
  for (let round = 0; round < rounds; round += 1) {
    const order = round % 2 === 0 ? [baseline, measured] : [measured, baseline];
    const used = new Map<Service, number>();
    for (const service of order) {
      const before = cpuMillisecondsOf(service.pid);
      await sleep(seconds * 1000);
      used.set(service, cpuMillisecondsOf(service.pid) - before);
    }
    const [base, load] = [used.get(baseline)!, used.get(measured)!];
    const ratio = load / Math.max(base, 10);
    ratios.push(ratio);
    const percent = (ms: number) => `${((ms / (seconds * 1000)) * 100).toFixed(1)}%`;
    rows.push([String(round + 1), percent(base), percent(load), `${ratio.toFixed(2)}x`]);
  }
  process.stdout.write(`${table(rows)}\n${spreadLine(ratios)}\n`);

  // Bursts: `burst` occurrences due on each minute.
  const first = startBurst(measured, burst);
  const last = first + (minutes - 1) * MINUTE;
  // Lateness is each run's start (the moment execute's transaction made it, queued for the node) after its time:
  // the occurrence's claim is stamped with its round's start, which would hide the time the round takes.
  const started = () =>
    measured.db
      .prepare('SELECT o.fire_at, r.started_at FROM schedule_occurrences o JOIN runs r ON r.run_id = o.run_id WHERE o.fire_at <= ?')
      .all(last) as Array<{ fire_at: number; started_at: number }>;
  await until(
    async () => started().length >= burst * minutes,
    'a run of every occurrence of the bursts',
    last - Date.now() + 5 * MINUTE,
    500,
  );
  const runs = started();
  const lateness = runs.map((row) => row.started_at - row.fire_at);
  process.stdout.write(
    `lateness over ${lateness.length} occurrences: median ${median(lateness)} ms, p99 ${percentileOf(lateness, 0.99)} ms, max ${Math.max(...lateness)} ms\n`,
  );
  // Each minute's burst is one sample: their p99s apart say whether the machine let the figure stand. Bursts of the
  // same build were seen to differ by 2x on a 2-core machine with nothing else running.
  const byBurst = new Map<number, number[]>();
  for (const row of runs) {
    const ofBurst = byBurst.get(row.fire_at) ?? [];
    ofBurst.push(row.started_at - row.fire_at);
    byBurst.set(row.fire_at, ofBurst);
  }
  const p99s = [...byBurst.values()].map((burstLateness) => percentileOf(burstLateness, 0.99));
  const p99 = median(p99s);
  const spread = p99s.length < 2 ? 0 : (Math.max(...p99s) - Math.min(...p99s)) / p99;
  const verdict = p99s.length >= 2 && spread > SPREAD_LIMIT ? 'TOO WIDE TO JUDGE' : p99 <= LATENESS_GOAL_MS ? 'met' : 'NOT MET';
  process.stdout.write(
    `each minute's burst, p99: ${p99s.map((ms) => `${ms} ms`).join(', ')}; median ${p99} ms, spread ${(spread * 100).toFixed(0)}% ` +
      `(goal p99 ≤ ${LATENESS_GOAL_MS} ms: ${verdict}${p99s.length < 2 ? '; one burst, no spread: --minutes 3 gives one' : ''})\n`,
  );
}

await main();
process.exit(0);

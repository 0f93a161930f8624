// The "200 polling nodes" scenario of scripts/bench/faults.ts: what many idle nodes holding long polls cost one
// svc-api instance, and whether runs wait behind them. 20 users, first with one stand-in node each
// (./stand-in-node.ts: one poll held 20 s at a time, as a daemon holds it, answering each run at once), then with
// ten each; at each size the instance is measured idle for a while and then under executes at a fixed rate from a
// load generator of its own (./soak-load.ts): its CPU, its resident set, the polls a second and the runs' latency.
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findAgentSku } from '../../src/contract/agents.js';
import type { ApiInstance } from './fault-fleet.js';
import type { SoakLoadCommand, SoakWindow } from './soak-load.js';
import type { StandInCommand, StandInCount } from './stand-in-node.js';
import { cpuMillisecondsOf, fundWallet, signIn, table } from './support.js';

declare const SCRIPT_DIR: string;

const USERS = 20;
const NODES_PER_USER = [1, 10];
const IDLE_MS = 20_000;
const LOAD_MS = 60_000;
const RUNS_PER_SECOND = 10;
const POLL_HOLD_SECONDS = 20;

interface Phase {
  nodes: number;
  state: 'idle' | `${number} runs/s`;
  cpuPercent: number;
  rssMb: number;
  pollsPerSecond: number;
  window?: SoakWindow;
}

export async function pollingNodes(api: ApiInstance, children: ChildProcess[]): Promise<{ emails: string[]; summary: string }> {
  const sku = findAgentSku('agent_ops_monitor_004')!;
  const users: { email: string; token: string; body: string }[] = [];
  process.stderr.write(`nodes200: signing in ${USERS} users…\n`);
  for (let index = 0; index < USERS; index += 1) {
    const email = `faults-many-${randomUUID().slice(0, 8)}@example.com`;
    const token = await signIn(api.origin, email);
    await fundWallet(api.origin, email, token, sku.price_cents * 200);
    users.push({ email, token, body: JSON.stringify({ user_id: email, agent_id: sku.agent_id }) });
  }
  const pid = api.pid!;
  const standIns: ChildProcess[] = [];
  const phases: Phase[] = [];
  try {
    let placed = 0;
    for (const perUser of NODES_PER_USER) {
      const more = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'stand-in-node.ts')], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(more);
      standIns.push(more);
      const nodes = users.flatMap(({ token }) => Array.from({ length: perUser - placed }, () => ({ api: api.origin, token })));
      await ask(more, {
        op: 'start',
        nodes,
        agentId: sku.agent_id,
        capacity: 4,
        pollsAtOnce: 1,
        waitSeconds: POLL_HOLD_SECONDS,
      } satisfies StandInCommand);
      placed = perUser;
      const total = USERS * perUser;
      process.stderr.write(`nodes200: ${total} nodes polling\n`);
      // The first polls of the new nodes all came at once: let them fall into their own rhythm before measuring.
      await sleep(POLL_HOLD_SECONDS * 1000);
      phases.push(await measurePhase(pid, standIns, total, 'idle', IDLE_MS));
      const load = fork(join(SCRIPT_DIR, 'run-ts.mjs'), [join(SCRIPT_DIR, 'soak-load.ts')], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(load);
      await ask(load, {
        op: 'start',
        origin: api.origin,
        users: users.map(({ token, body }) => ({ token, body })),
        perSecond: RUNS_PER_SECOND,
      } satisfies SoakLoadCommand);
      const phase = await measurePhase(pid, standIns, total, `${RUNS_PER_SECOND} runs/s`, LOAD_MS);
      phase.window = (await ask(load, { op: 'window' } satisfies SoakLoadCommand)) as SoakWindow;
      phases.push(phase);
      await ask(load, { op: 'stop' } satisfies SoakLoadCommand);
    }
  } finally {
    // The stand-ins hold polls of 20 s: killed, not asked to stop, so the scenarios after this one start at once.
    for (const child of standIns) child.kill('SIGKILL');
  }
  const rows = [['nodes', 'load', 'svc-api CPU', 'RSS', 'polls/s', 'runs answered', 'p50', 'p99', 'statuses']];
  for (const phase of phases) {
    rows.push([
      String(phase.nodes),
      phase.state,
      `${phase.cpuPercent.toFixed(1)}%`,
      `${phase.rssMb.toFixed(1)} MB`,
      phase.pollsPerSecond.toFixed(1),
      String(phase.window?.answered ?? '-'),
      phase.window === undefined ? '-' : `${phase.window.p50.toFixed(0)} ms`,
      phase.window === undefined ? '-' : `${phase.window.p99.toFixed(0)} ms`,
      phase.window === undefined ? '-' : JSON.stringify(phase.window.statuses),
    ]);
  }
  process.stdout.write(`\n${table(rows)}\n`);
  const [fewIdle, fewLoaded, manyIdle, manyLoaded] = phases as [Phase, Phase, Phase, Phase];
  const summary =
    `from ${fewIdle.nodes} to ${manyIdle.nodes} nodes: idle CPU ${fewIdle.cpuPercent.toFixed(1)}% → ${manyIdle.cpuPercent.toFixed(1)}%, RSS ${fewIdle.rssMb.toFixed(0)} → ${manyIdle.rssMb.toFixed(0)} MB; ` +
    `at ${RUNS_PER_SECOND} runs/s CPU ${fewLoaded.cpuPercent.toFixed(1)}% → ${manyLoaded.cpuPercent.toFixed(1)}%, p99 ${fewLoaded.window!.p99.toFixed(0)} → ${manyLoaded.window!.p99.toFixed(0)} ms`;
  return { emails: users.map(({ email }) => email), summary };
}

async function measurePhase(pid: number, standIns: ChildProcess[], nodes: number, state: Phase['state'], ms: number): Promise<Phase> {
  const polls = async (): Promise<number> =>
    (
      await Promise.all(standIns.map((child) => ask(child, { op: 'count' } satisfies StandInCommand) as Promise<{ answer: StandInCount }>))
    ).reduce((sum, each) => sum + each.answer.polls, 0);
  const pollsBefore = await polls();
  const cpuBefore = cpuMillisecondsOf(pid);
  const began = Date.now();
  await sleep(ms);
  const elapsed = Date.now() - began;
  const cpuPercent = ((cpuMillisecondsOf(pid) - cpuBefore) / elapsed) * 100;
  const pollsPerSecond = ((await polls()) - pollsBefore) / (elapsed / 1000);
  const rssMb = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
  return { nodes, state, cpuPercent, rssMb, pollsPerSecond };
}

function ask(child: ChildProcess, command: object): Promise<unknown> {
  return new Promise((resolve, reject) => {
    child.once('message', (answer: { ok?: boolean; error?: string }) =>
      answer.ok === false ? reject(new Error(answer.error)) : resolve(answer),
    );
    child.send(command);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

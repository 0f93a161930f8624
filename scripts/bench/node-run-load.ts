// The load generator of scripts/bench/node-run.ts, in a process of its own (forked with IPC): neither svc-api nor the
// daemon shares its CPU time with the timing. It does what it is told, one batch at a time, and answers with the
// timings; the parent decides the order of the batches (rotating rounds) and judges them.
//   direct: the agent through createLocalRunner (src/node/runner/run-local.ts), the code the daemon's executor runs
//           each run with (bundle lookup, the run's directory, limits, stdin, stdout parsed), in this process.
//   node:   POST /v1/swarm/execute with the JWT, answered once the node ran the agent and reported its result.
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { createLocalRunner, type LocalRunner } from '../../src/node/runner/run-local.js';

declare const REPO_ROOT: string;

export interface LoadSetup {
  api: string;
  token: string;
  email: string;
  agentId: string;
  /** The node's home: its agents/<agent_id>/ is the bundle both sides run. */
  home: string;
  /** Where the direct runs make their directories (not the node's var/). */
  varDir: string;
  connections: number;
}

export type LoadCommand =
  | { op: 'setup'; setup: LoadSetup }
  /** `count` pairs, one run of each side after the other, `first` first in every pair: milliseconds each. */
  | { op: 'pairs'; count: number; first: Side }
  /** `count` runs of one side, `concurrency` at a time: how long they took. */
  | { op: 'burst'; side: Side; count: number; concurrency: number }
  | { op: 'exit' };

export type Side = 'direct' | 'node';

export type LoadAnswer =
  | { op: 'ready' }
  | { op: 'pairs'; direct: number[]; node: number[]; failures: string[] }
  | { op: 'burst'; side: Side; seconds: number; completed: number; failures: string[] }
  | { op: 'error'; message: string };

let runner: LocalRunner | undefined;
let setup: LoadSetup | undefined;
let pool: Pool | undefined;

/** One run of `side`; undefined when it succeeded, else why not. */
async function runOnce(side: Side): Promise<string | undefined> {
  const { token, email, agentId } = setup!;
  if (side === 'direct') {
    const outcome = await runner!.run({ run_id: randomUUID(), agent_id: agentId, user_id: email, tier: 'svc_starter_agents', input: {} });
    return outcome.status === 'succeeded' ? undefined : `direct: ${JSON.stringify(outcome.output)}`;
  }
  const response = await pool!.request({
    path: '/v1/swarm/execute',
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': randomUUID() },
    body: JSON.stringify({ user_id: email, agent_id: agentId }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 200) return `execute ${response.statusCode}: ${text.slice(0, 200)}`;
  const run = JSON.parse(text) as { status?: string; node_id?: string | null };
  return run.status === 'succeeded' && typeof run.node_id === 'string'
    ? undefined
    : `execute answered ${run.status} on node ${run.node_id}`;
}

async function timed(side: Side, failures: string[]): Promise<number> {
  const started = performance.now();
  const failure = await runOnce(side);
  const ms = performance.now() - started;
  if (failure !== undefined) failures.push(failure);
  return ms;
}

async function handle(command: LoadCommand): Promise<LoadAnswer | undefined> {
  switch (command.op) {
    case 'setup':
      setup = command.setup;
      runner = createLocalRunner({ home: setup.home, varDir: setup.varDir, packageDir: REPO_ROOT, isolation: 'none' });
      pool = new Pool(setup.api, { connections: setup.connections, pipelining: 1 });
      return { op: 'ready' };
    case 'pairs': {
      const direct: number[] = [];
      const node: number[] = [];
      const failures: string[] = [];
      const second: Side = command.first === 'direct' ? 'node' : 'direct';
      for (let i = 0; i < command.count; i += 1) {
        for (const side of [command.first, second]) (side === 'direct' ? direct : node).push(await timed(side, failures));
      }
      return { op: 'pairs', direct, node, failures };
    }
    case 'burst': {
      const failures: string[] = [];
      let started = 0;
      let completed = 0;
      const begin = performance.now();
      const worker = async (): Promise<void> => {
        while (started < command.count) {
          started += 1;
          const failure = await runOnce(command.side);
          if (failure === undefined) completed += 1;
          else failures.push(failure);
        }
      };
      await Promise.all(Array.from({ length: command.concurrency }, worker));
      return { op: 'burst', side: command.side, seconds: (performance.now() - begin) / 1000, completed, failures };
    }
    case 'exit':
      await pool?.close();
      process.disconnect?.();
      return undefined;
  }
}

process.on('message', (command: LoadCommand) => {
  handle(command).then(
    (answer) => {
      if (answer !== undefined) process.send!(answer);
    },
    (error: unknown) =>
      process.send!({ op: 'error', message: error instanceof Error ? error.message : String(error) } satisfies LoadAnswer),
  );
});

// The load generator of scripts/bench/execute.ts, in a process of its own (forked with IPC): neither svc-api nor
// the stand-in node shares its event loop with the timing. It does what it is told, one burst at a time, and answers
// with the timings; the parent decides the order of the bursts (rotating rounds) and judges them.
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';

export interface BurstCommand {
  op: 'burst';
  /** Each request goes to the next origin in turn (two svc-api instances behind one balancer). */
  origins: string[];
  /** Each request goes to the next user in turn: its JWT and its execute body. */
  users: { token: string; body: string }[];
  count: number;
  connections: number;
  maxSeconds: number;
}

export interface BurstAnswer {
  completed: number;
  seconds: number;
  /** Milliseconds from sending the request to the end of the response body, one per completed request. */
  latencies: number[];
  /** Status code → how many. */
  statuses: Record<string, number>;
  /** Per user, in the order given: the executes answered 200 (each must have been charged once). */
  answered: number[];
}

/** One run at a time on each target in turn, `count` each: latencies per target, interleaved run by run. */
export interface SoloCommand {
  op: 'solo';
  targets: { origin: string; token: string; body: string }[];
  count: number;
}

export interface SoloAnswer {
  /** Per target, in the order given: milliseconds per run. */
  latencies: number[][];
  /** Per target: the runs answered 200. */
  answered: number[];
}

const pools = new Map<string, Pool>();

function poolOf(origin: string, connections: number): Pool {
  const key = `${origin} ${connections}`;
  let pool = pools.get(key);
  if (pool === undefined) {
    pool = new Pool(origin, { connections, pipelining: 1 });
    pools.set(key, pool);
  }
  return pool;
}

/** `connections` loops, one request at a time each, until `count` completed or the time is up. */
async function burst(command: BurstCommand): Promise<BurstAnswer> {
  const perOrigin = Math.ceil(command.connections / command.origins.length);
  const targets = command.origins.map((origin) => poolOf(origin, perOrigin));
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const answered = command.users.map(() => 0);
  let started = 0;
  const begin = performance.now();
  const deadline = begin + command.maxSeconds * 1000;
  const worker = async (): Promise<void> => {
    while (started < command.count && performance.now() < deadline) {
      const index = started % command.users.length;
      const user = command.users[index]!;
      // Every user's executes reach every instance: the origin turns once more after each pass over the users.
      const pool = targets[(started + Math.floor(started / command.users.length)) % targets.length]!;
      started += 1;
      const sent = performance.now();
      const response = await pool.request({
        path: '/v1/swarm/execute',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'idempotency-key': randomUUID() },
        body: user.body,
      });
      await response.body.text();
      latencies.push(performance.now() - sent);
      statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
      if (response.statusCode === 200) answered[index] = answered[index]! + 1;
    }
  };
  await Promise.all(Array.from({ length: command.connections }, worker));
  return { completed: latencies.length, seconds: (performance.now() - begin) / 1000, latencies, statuses, answered };
}

async function solo(command: SoloCommand): Promise<SoloAnswer> {
  const latencies = command.targets.map((): number[] => []);
  const answered = command.targets.map(() => 0);
  for (let run = 0; run < command.count; run += 1) {
    for (const [index, target] of command.targets.entries()) {
      const sent = performance.now();
      const response = await poolOf(target.origin, 1).request({
        path: '/v1/swarm/execute',
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${target.token}`, 'idempotency-key': randomUUID() },
        body: target.body,
      });
      await response.body.text();
      latencies[index]!.push(performance.now() - sent);
      if (response.statusCode === 200) answered[index] = answered[index]! + 1;
    }
  }
  return { latencies, answered };
}

process.on('message', (command: BurstCommand | SoloCommand | { op: 'exit' }) => {
  if (command.op === 'exit') {
    void Promise.all([...pools.values()].map((pool) => pool.close())).then(() => process.disconnect());
    return;
  }
  (command.op === 'solo' ? solo(command) : burst(command)).then(
    (answer) => process.send!({ ok: true, answer }),
    (error: unknown) => process.send!({ ok: false, error: error instanceof Error ? error.message : String(error) }),
  );
});

// The nodes of the execute bench, one per user, that answer every run at once, in a process of their own (forked
// with IPC by scripts/bench/execute.ts): since runs execute on nodes (docs/decisions/0011-agents-run-on-the-node.md)
// a run needs an online node serving its agent (without one, execute answers 409 no_node_available). Each speaks the
// node protocol over HTTP like the daemon (deploy token from the signed-in user, enroll, register, long polls,
// results) but runs nothing, so the bench measures svc-api's own path: the execute, the claim of a poll, the result.
// They count their exchanges (polls and results).
import type { AssignedRun } from '../../src/contract/node-protocol.js';

/** `nodes`: one per user, each polling `api` (its instance behind the balancer) with the user's JWT as `token`. */
/** `pollsAtOnce` and `waitSeconds`: as below unless given (a daemon holds one poll of 20 s). */
export type StandInCommand =
  | { op: 'start'; nodes: { api: string; token: string }[]; agentId: string; capacity: number; pollsAtOnce?: number; waitSeconds?: number }
  | { op: 'count' }
  | { op: 'stop' };
export interface StandInCount {
  polls: number;
  results: number;
}

/** Several polls at once, as several daemons would: one poll's round trip never caps the runs handed out. */
const POLLS_AT_ONCE = 4;

const stopped = new AbortController();
const count: StandInCount = { polls: 0, results: 0 };
const loops: Promise<void>[] = [];

async function start(
  api: string,
  token: string,
  agentId: string,
  capacity: number,
  pollsAtOnce = POLLS_AT_ONCE,
  waitSeconds = 1,
): Promise<void> {
  const deploy = await call(api, 'POST', '/v1/swarm/nodes/deploy-token', token);
  const enrolled = await call(api, 'POST', '/v1/swarm/nodes/enroll', deploy.deploy_token as string);
  const credential = enrolled.node_credential as string;
  await call(api, 'PUT', `/v1/swarm/nodes/self/agents/${agentId}`, credential);
  const report = async (run: AssignedRun): Promise<void> => {
    await call(api, 'POST', `/v1/swarm/runs/${run.run_id}/result`, credential, {
      lease_id: run.lease_id,
      status: 'succeeded',
      output: {},
    }).catch(() => undefined);
    count.results += 1;
  };
  const loop = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      const body = { hostname: 'bench', version: 'bench', capacity, running: [], wait_seconds: waitSeconds };
      const polled = await call(api, 'POST', '/v1/swarm/nodes/poll', credential, body).catch(() => undefined);
      count.polls += 1;
      for (const run of (polled?.runs ?? []) as AssignedRun[]) void report(run);
    }
  };
  // One poll answered before the bench goes on: the service counts a node online from its first poll.
  await call(api, 'POST', '/v1/swarm/nodes/poll', credential, {
    hostname: 'bench',
    version: 'bench',
    capacity,
    running: [],
    wait_seconds: 0,
  });
  loops.push(...Array.from({ length: pollsAtOnce }, loop));
}

async function call(api: string, method: string, path: string, bearer: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

process.on('message', (command: StandInCommand) => {
  if (command.op === 'count') {
    process.send!({ ok: true, answer: { ...count } });
  } else if (command.op === 'stop') {
    stopped.abort();
    void Promise.all(loops).then(() => process.disconnect());
  } else {
    // A user's nodes enroll one after another: a user's new deploy token replaces the one before it.
    const byUser = new Map<string, { api: string; token: string }[]>();
    for (const node of command.nodes) byUser.set(node.token, [...(byUser.get(node.token) ?? []), node]);
    const enrollAll = async (nodes: { api: string; token: string }[]): Promise<void> => {
      for (const node of nodes)
        await start(node.api, node.token, command.agentId, command.capacity, command.pollsAtOnce, command.waitSeconds);
    };
    Promise.all([...byUser.values()].map(enrollAll)).then(
      () => process.send!({ ok: true, answer: null }),
      (error: unknown) => process.send!({ ok: false, error: error instanceof Error ? error.message : String(error) }),
    );
  }
});

// A node for the execute bench that answers every run at once, in the bench's process: since issue 13 a run needs
// an online node serving its agent (without one, execute answers 409 no_node_available). It speaks the node
// protocol over HTTP like the daemon (deploy token from the signed-in user, enroll, register, long polls, results)
// but runs nothing, so the bench measures svc-api's own path: two transactions to accept, one claim, one finish.
import type { AssignedRun } from '../../src/contract/node-protocol.js';

export interface StandInNode {
  stop(): Promise<void>;
}

export async function startStandInNode(api: string, token: string, agentId: string, capacity: number): Promise<StandInNode> {
  const deploy = await call(api, 'POST', '/v1/swarm/nodes/deploy-token', token);
  const enrolled = await call(api, 'POST', '/v1/swarm/nodes/enroll', deploy.deploy_token as string);
  const credential = enrolled.node_credential as string;
  await call(api, 'PUT', `/v1/swarm/nodes/self/agents/${agentId}`, credential);
  const stopped = new AbortController();
  const report = (run: AssignedRun) =>
    call(api, 'POST', `/v1/swarm/runs/${run.run_id}/result`, credential, { lease_id: run.lease_id, status: 'succeeded', output: {} }).catch(() => undefined);
  const loop = async (): Promise<void> => {
    while (!stopped.signal.aborted) {
      const polled = await call(api, 'POST', '/v1/swarm/nodes/poll', credential, { hostname: 'bench', version: 'bench', capacity, running: [], wait_seconds: 1 }).catch(
        () => undefined,
      );
      for (const run of (polled?.runs ?? []) as AssignedRun[]) void report(run);
    }
  };
  // Several polls at once, as several daemons would: one poll's round trip never caps the runs handed out.
  const loops = Array.from({ length: 4 }, loop);
  return {
    async stop() {
      stopped.abort();
      await Promise.all(loops);
    },
  };
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

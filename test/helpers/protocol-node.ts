// A node as docs/api.md "Runs on the node" describes the protocol, played by the test over real HTTP: enrolled with a
// real deploy token, serving the agents it is told, answering each run as the test decides (at once, later, or
// never: a node that dies mid-run). The service is the code under test here; the real node (swarm-node daemon)
// speaks the same protocol in test/daemon.
import { expect } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { activatedSession } from './funnel.js';
import { httpRequest } from './http.js';

export interface EnrolledTestNode {
  node_id: string;
  credential: string;
  email: string;
}

/** A starter-agents purchase of `email`, activated and enrolled: the node's id and its credential. */
export async function enrollNode(baseUrl: string, email: string, options: { ephemeral?: boolean } = {}): Promise<EnrolledTestNode> {
  const { deploy_token } = await activatedSession(baseUrl, email);
  const body = options.ephemeral === undefined ? {} : { body: { ephemeral: options.ephemeral } };
  const enrolled = await httpRequest(`${baseUrl}/v1/swarm/nodes/enroll`, { method: 'POST', token: deploy_token, ...body });
  expect(enrolled.status, enrolled.text).toBe(200);
  return { node_id: enrolled.body.node_id, credential: enrolled.body.node_credential, email };
}

export type Answer = { status: 'succeeded'; output: unknown } | { status: 'failed'; output: { error: string; message: string } };

export interface ServingNode extends EnrolledTestNode {
  /** Every run the node was handed, in order. */
  readonly received: AssignedRun[];
  /** Every run the service told it to cancel, in order. */
  readonly cancels: string[];
  /** Stops polling; runs it holds are neither reported nor renewed (a node that is gone). */
  stop(): Promise<void>;
}

export interface ServeOptions {
  agents: readonly string[];
  /** The labels it carries (PUT self/labels before its first poll). */
  labels?: readonly string[];
  /** What the node does with a run; the run counts as held (its lease renewed) until this settles. */
  answer?: (run: AssignedRun) => Promise<Answer> | Answer;
  capacity?: number;
  /** Seconds the service may hold each poll. */
  waitSeconds?: number;
  /**
   * A run the service says to cancel is stopped and reported failed `cancelled`, as the real node does, unless this
   * says to ignore it (a node that stays silent). Every cancel the node is told of is in `cancels`.
   */
  ignoreCancel?: boolean;
}

export const echoAnswer = (run: AssignedRun): Answer => ({
  status: 'succeeded',
  output: { agent_id: run.agent_id, run_id: run.run_id, input: run.input, summary: `ran ${run.agent_id} on the test node` },
});

const serving = new Set<ServingNode>();

/** Stops every node serve() started and has not stopped yet (a test file's afterAll). */
export async function stopServingNodes(): Promise<void> {
  await Promise.all([...serving].map((node) => node.stop()));
}

/** An enrolled node of `email` serving `agents` with the echo answer: what a test needs so its runs can execute. */
export async function nodeFor(baseUrl: string, email: string, agents: readonly string[]): Promise<ServingNode> {
  return serve(baseUrl, await enrollNode(baseUrl, email), { agents });
}

export async function serve(baseUrl: string, node: EnrolledTestNode, options: ServeOptions): Promise<ServingNode> {
  const call = (method: string, path: string, body?: unknown) =>
    httpRequest(`${baseUrl}${path}`, { method, token: node.credential, ...(body === undefined ? {} : { body }) });
  for (const agent of options.agents) {
    const registered = await call('PUT', `/v1/swarm/nodes/self/agents/${agent}`);
    expect(registered.status, registered.text).toBe(200);
  }
  if (options.labels !== undefined) {
    const labelled = await call('PUT', '/v1/swarm/nodes/self/labels', { labels: options.labels });
    expect(labelled.status, labelled.text).toBe(200);
  }
  const received: AssignedRun[] = [];
  const cancels: string[] = [];
  const held = new Map<string, AssignedRun>();
  const stopped = new AbortController();
  const answer = options.answer ?? echoAnswer;
  let firstPoll!: () => void;
  const polling = new Promise<void>((resolve) => (firstPoll = resolve));

  const work = async (run: AssignedRun): Promise<void> => {
    const result = await answer(run);
    // Not a run it no longer holds (cancelled), nor an attempt since handed again under a new lease.
    if (stopped.signal.aborted || held.get(run.run_id) !== run) return;
    held.delete(run.run_id);
    await call('POST', `/v1/swarm/runs/${run.run_id}/result`, { lease_id: run.lease_id, ...result });
  };
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      const capacity = Math.max(0, (options.capacity ?? 4) - held.size);
      const polled = await call('POST', '/v1/swarm/nodes/poll', {
        hostname: 'test-node',
        version: 'test',
        capacity,
        running: [...held.keys()],
        wait_seconds: options.waitSeconds ?? 1,
      }).catch(() => undefined);
      firstPoll();
      if (stopped.signal.aborted) break;
      if (polled === undefined || polled.status !== 200) {
        // The service is away or stopping: poll again a moment later, as a node backs off.
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      for (const runId of (polled.body.cancel as string[] | undefined) ?? []) {
        cancels.push(runId);
        const run = held.get(runId);
        if (options.ignoreCancel === true || run === undefined) continue;
        held.delete(runId);
        call('POST', `/v1/swarm/runs/${runId}/result`, {
          lease_id: run.lease_id,
          status: 'failed',
          output: { error: 'cancelled', message: 'stopped: its user cancelled it' },
        }).catch(() => undefined);
      }
      for (const run of polled.body.runs as AssignedRun[]) {
        received.push(run);
        held.set(run.run_id, run);
        // A result the service never gets (it stopped) is the test's business, not an unhandled rejection.
        work(run).catch(() => undefined);
      }
    }
  })();
  await polling;
  const handle: ServingNode = {
    ...node,
    received,
    cancels,
    async stop() {
      serving.delete(handle);
      stopped.abort();
      await loop;
    },
  };
  serving.add(handle);
  return handle;
}

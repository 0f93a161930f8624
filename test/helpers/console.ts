// What the console's tests share (docs/api.md "Console"): a signed-in browser session of a user (the wallet's sign-in
// link, over HTTP), a run its node holds until the test finishes it, with the log lines and artifacts the node sends
// as a real node would, and the forms a browser posts.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { walletLoginUrl } from '../../src/contract/claims.js';
import type { LogEntry } from '../../src/contract/jobs.js';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import { waitFor } from './funnel.js';
import { httpRequest, type ApiResponse } from './http.js';
import { enrollNode, serve, type Answer, type ServingNode } from './protocol-node.js';

export const CONSOLE_AGENT = 'agent_ops_monitor_004';

/**
 * Opens the sign-in link as a browser does when it is typed or pasted (Fetch Metadata says none, docs/api.md "Wallet
 * page"): the session cookie ("svc_wallet=…") the wallet sets.
 */
export async function consoleCookie(walletUrl: string, token: string): Promise<string> {
  const response = await httpRequest(walletLoginUrl(walletUrl, token), { headers: { 'sec-fetch-site': 'none' } });
  expect(response.status, response.text).toBe(303);
  const cookie = /^(svc_wallet=[^;]+)/.exec(response.headers.get('set-cookie') ?? '')?.[1];
  expect(cookie).toBeDefined();
  return cookie!;
}

/** A console page, as a browser of the session asks for it. */
export function consoleGet(walletUrl: string, path: string, cookie?: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return httpRequest(`${walletUrl}/${path}`, { headers: { ...headers, ...(cookie === undefined ? {} : { cookie }) } });
}

/** A form of the console, urlencoded, posted from the console itself (Fetch Metadata says same-origin) unless told. */
export function consolePost(
  walletUrl: string,
  path: string,
  fields: Record<string, string | readonly string[]>,
  cookie?: string,
  headers: Record<string, string> = { 'sec-fetch-site': 'same-origin', origin: 'null' },
): Promise<ApiResponse> {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) for (const each of [value].flat()) form.append(name, each);
  return httpRequest(`${walletUrl}/${path}`, {
    method: 'POST',
    rawBody: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers, ...(cookie === undefined ? {} : { cookie }) },
  });
}

export interface HeldRun {
  run: AssignedRun;
  node: ServingNode;
  /** Sends log lines as the node does, numbered on from the last. */
  log(lines: ReadonlyArray<string | { text: string; stream: LogEntry['stream'] }>): Promise<void>;
  /** Sends structured events as the node does, numbered on from the last. */
  events(events: ReadonlyArray<{ type: 'progress' | 'output' | 'tokens' | 'custom'; name?: string; data: unknown }>): Promise<void>;
  /** Uploads a file as the node does after the agent. */
  artifact(name: string, bytes: Buffer): Promise<void>;
  /** The node reports the run's result. */
  finish(answer?: Answer): void;
}

/**
 * A run of `email`'s (whose JWT is `token`), started with the JWT as curl would, taken by a node of theirs enrolled
 * for it, and held until the test finishes it. The user's wallet must hold the agent's price.
 */
export async function heldRun(
  baseUrl: string,
  email: string,
  token: string,
  options: { agent?: string; input?: unknown } = {},
): Promise<HeldRun> {
  const agent = options.agent ?? CONSOLE_AGENT;
  const started: AssignedRun[] = [];
  const waiting: Array<(answer: Answer) => void> = [];
  const node = await serve(baseUrl, await enrollNode(baseUrl, email), {
    agents: [agent],
    answer: (run) => {
      started.push(run);
      return new Promise((resolve) => waiting.push(resolve));
    },
  });
  const accepted = await httpRequest(`${baseUrl}/v1/swarm/execute`, {
    token,
    headers: { 'idempotency-key': randomUUID(), prefer: 'respond-async' },
    // Pinned to this node: another node of the user's, held by an earlier test, would take it otherwise.
    body: { user_id: email, agent_id: agent, node_id: node.node_id, ...(options.input === undefined ? {} : { input: options.input }) },
  });
  expect(accepted.status, accepted.text).toBe(202);
  const run = await waitFor(async () => started.find((held) => held.run_id === accepted.body.run_id), 'the node to take the run');
  let seq = 0;
  let eventSeq = 0;
  return {
    run,
    node,
    async events(events) {
      const sent = await httpRequest(`${baseUrl}/v1/swarm/runs/${run.run_id}/events`, {
        method: 'POST',
        token: node.credential,
        body: {
          lease_id: run.lease_id,
          events: events.map((event) => ({ seq: eventSeq++, attempt: 1, at: new Date().toISOString(), ...event })),
        },
      });
      expect(sent.status, sent.text).toBe(200);
    },
    async log(lines) {
      const entries = lines.map((line) => ({
        seq: seq++,
        at: new Date().toISOString(),
        ...(typeof line === 'string' ? { stream: 'stdout' as const, text: line } : line),
      }));
      const sent = await httpRequest(`${baseUrl}/v1/swarm/runs/${run.run_id}/logs`, {
        method: 'POST',
        token: node.credential,
        body: { lease_id: run.lease_id, entries },
      });
      expect(sent.status, sent.text).toBe(200);
    },
    async artifact(name, bytes) {
      const put = await httpRequest(`${baseUrl}/v1/swarm/runs/${run.run_id}/artifacts/${name}?lease_id=${run.lease_id}`, {
        method: 'PUT',
        token: node.credential,
        headers: { 'content-type': 'application/octet-stream' },
        rawBody: bytes,
      });
      expect(put.status, put.text).toBe(201);
    },
    finish: (answer = { status: 'succeeded', output: { summary: 'all checks passed', checks: 3 } }) =>
      waiting.splice(0).forEach((resolve) => resolve(answer)),
  };
}

/** Waits until the service has the run finished (the node's result is taken in the background). */
export async function finished(baseUrl: string, token: string, runId: string): Promise<void> {
  await waitFor(async () => {
    const run = await httpRequest(`${baseUrl}/v1/swarm/runs/${runId}`, { token });
    return run.body.finished_at === null ? undefined : true;
  }, `run ${runId} to finish`);
}

/** A run of the user's through a node of theirs, finished as `answer` says: what the pages about past runs show. */
export async function finishedRun(baseUrl: string, email: string, token: string, answer?: Answer): Promise<HeldRun> {
  const held = await heldRun(baseUrl, email, token);
  held.finish(answer);
  await finished(baseUrl, token, held.run.run_id);
  return held;
}

// A run its node holds until the test finishes it, and a follower of Server-Sent Events that keeps every event in
// order: the logs' and the events' tests share them (test/api/run-logs.test.ts, test/api/run-stream.test.ts).
import { randomUUID } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { expect } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import type { LogEntry } from '../../src/contract/jobs.js';
import { waitFor } from '../helpers/funnel.js';
import { enrollNode, serve, type Answer } from '../helpers/protocol-node.js';
import type { TestService } from '../helpers/svc-api.js';
import { execute, paidUser, type PaidUser } from './execute-fixtures.js';

const AGENT = 'agent_ops_monitor_004';

export interface HeldRun {
  user: PaidUser;
  run: AssignedRun;
  credential: string;
  /** The node reports the run's result. */
  finish(answer?: Answer): void;
}

/** A run its node holds (its lease renewed by the node's polls) until the test finishes it. */
export async function heldRun(service: TestService, user?: PaidUser): Promise<HeldRun> {
  const owner = user ?? (await paidUser(service, 100));
  const started: AssignedRun[] = [];
  const waiting: Array<(answer: Answer) => void> = [];
  const enrolled = await enrollNode(service.baseUrl, owner.email);
  await serve(service.baseUrl, enrolled, {
    agents: [AGENT],
    answer: (run) => {
      started.push(run);
      return new Promise((resolve) => waiting.push(resolve));
    },
  });
  const accepted = await execute(service, owner.token, { user_id: owner.email, agent_id: AGENT }, randomUUID(), {
    prefer: 'respond-async',
  });
  expect(accepted.status, accepted.text).toBe(202);
  const run = await waitFor(async () => started.find((held) => held.run_id === accepted.body.run_id), 'the node to take the run');
  return {
    user: owner,
    run,
    credential: enrolled.credential,
    finish: (answer = { status: 'succeeded', output: { done: true } }) => waiting.splice(0).forEach((resolve) => resolve(answer)),
  };
}

/** A GET of Server-Sent Events read as a client would: every event kept, in order, as it comes. */
export class Follow {
  readonly events: EventSourceMessage[] = [];
  readonly contentType: string | null;
  /** Resolves when the service ends the stream. */
  readonly ended: Promise<void>;
  readonly #abort: AbortController;

  private constructor(response: Response, abort: AbortController) {
    this.contentType = response.headers.get('content-type');
    this.#abort = abort;
    const parser = createParser({ onEvent: (event) => this.events.push(event) });
    this.ended = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      } catch {
        // closed by the test
      }
    })();
  }

  static async open(url: string, token: string, headers: Record<string, string> = {}, body?: unknown): Promise<Follow> {
    const abort = new AbortController();
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) }),
      signal: abort.signal,
    });
    expect(response.status, await (response.status === 200 ? Promise.resolve('') : response.text())).toBe(200);
    return new Follow(response, abort);
  }

  /** The data of every event of this name, parsed. */
  named<T>(name: string): T[] {
    return this.events.filter((event) => event.event === name).map((event) => JSON.parse(event.data) as T);
  }

  logs(): LogEntry[] {
    return this.events.filter((event) => event.event === 'log').map((event) => JSON.parse(event.data) as LogEntry);
  }

  end(): Record<string, unknown> | undefined {
    const end = this.events.find((event) => event.event === 'end');
    return end === undefined ? undefined : (JSON.parse(end.data) as Record<string, unknown>);
  }

  /** Until `count` events of this name came. */
  async waitFor(name: string, count: number): Promise<void> {
    await waitFor(async () => (this.named(name).length >= count ? true : undefined), `${count} ${name} events through the follow`);
  }

  async waitForSeq(seq: number): Promise<void> {
    await waitFor(async () => (this.logs().some((log) => log.seq === seq) ? true : undefined), `entry ${seq} through the follow`);
  }

  close(): void {
    this.#abort.abort();
  }
}

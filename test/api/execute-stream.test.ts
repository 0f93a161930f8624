// A streamed execute (docs/api.md "A streamed execute"), against the real svc-api and a protocol node that holds the
// run: POST /v1/swarm/execute with Accept: text/event-stream answers the run first, its events as the node sends
// them, and its result last. The client going away leaves the run running; the same Idempotency-Key streams the same
// run again, from its first event or after Last-Event-ID's, and the wallet is charged once.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { AssignedRun } from '../../src/contract/node-protocol.js';
import type { RunEventEntry } from '../../src/contract/run-events.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode, serve, type Answer } from '../helpers/protocol-node.js';
import { useSvcApi } from '../helpers/svc-api.js';
import { paidUser, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';
import { Follow } from './held-run.js';

const AGENT = 'agent_ops_monitor_004';
const PRICE = 4;

describe('a streamed execute', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  afterAll(stopNodes);

  it('streams the run, its events and its result; a client that goes does not cancel it; the key replays the stream, charged once', async () => {
    const user = await paidUser(service, 100);
    const started: AssignedRun[] = [];
    const release: Array<(answer: Answer) => void> = [];
    const node = await enrollNode(service.baseUrl, user.email);
    await serve(service.baseUrl, node, {
      agents: [AGENT],
      answer: (run) => {
        started.push(run);
        return new Promise((resolve) => release.push(resolve));
      },
    });
    const key = randomUUID();
    const executeUrl = `${service.baseUrl}/v1/swarm/execute`;
    const body = { user_id: user.email, agent_id: AGENT };
    const streamed = (headers: Record<string, string> = {}) =>
      Follow.open(executeUrl, user.token, { accept: 'text/event-stream', 'idempotency-key': key, ...headers }, body);

    const first = await streamed();
    expect(first.contentType).toMatch(/^text\/event-stream/);
    await first.waitFor('run', 1);
    const [opening] = first.named<{ run_id: string; status: string }>('run');
    const run = await waitFor(async () => started.find((held) => held.run_id === opening!.run_id), 'the node to take the run');
    const post = (events: RunEventEntry[]) =>
      httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}/events`, {
        method: 'POST',
        token: node.credential,
        body: { lease_id: run.lease_id, events },
      });
    const at = new Date().toISOString();
    const posted = await post([0, 1].map((seq) => ({ seq, attempt: 1, type: 'progress' as const, at, data: { done: seq } })));
    expect(posted.status, posted.text).toBe(200);
    await first.waitFor('run_event', 2);
    expect(first.events.filter((event) => event.event === 'run_event').map((event) => event.id)).toEqual(['0', '1']);

    // The client goes: the run goes on, and its next event is stored all the same.
    first.close();
    await first.ended;
    expect((await post([{ seq: 2, attempt: 1, type: 'progress', at, data: { done: 2 } }])).status).toBe(200);
    const meanwhile = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${run.run_id}`, { token: user.token });
    expect(meanwhile.body.status).toBe('running');

    // The same key, with where the client got to: the rest, then the result once the node answers.
    const resumed = await streamed({ 'last-event-id': '1' });
    await resumed.waitFor('run_event', 1);
    release.splice(0).forEach((resolve) => resolve({ status: 'succeeded', output: { summary: 'done' } }));
    await resumed.ended;
    expect(resumed.events.map((event) => [event.event, event.id ?? null])).toEqual([
      ['run', null],
      ['run_event', '2'],
      ['result', null],
    ]);
    expect(resumed.named<Record<string, unknown>>('result')[0]).toMatchObject({
      run_id: run.run_id,
      status: 'succeeded',
      output: { summary: 'done' },
      charged_cents: PRICE,
    });

    // Once more after the end: the whole stream from the first event, and no second charge.
    const replay = await streamed();
    await replay.ended;
    expect(replay.events.map((event) => event.event)).toEqual(['run', 'run_event', 'run_event', 'run_event', 'result']);
    expect(replay.named<{ data: unknown }>('run_event').map((event) => event.data)).toEqual([{ done: 0 }, { done: 1 }, { done: 2 }]);
    const wallet = await httpRequest(`${service.baseUrl}/v1/swarm/wallet`, { token: user.token });
    expect(wallet.body.balance_cents).toBe(100 - PRICE);
    expect(started.filter((held) => held.run_id === run.run_id)).toHaveLength(1);
  });
});

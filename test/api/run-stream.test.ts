// docs/api.md "Run events": the node holding a run sends its structured events in batches (seq from 0, a repeat
// stored once, each with its attempt, the caps counted here too); the run's user follows them as Server-Sent Events
// until the run ends, cut and resumed with Last-Event-ID without a gap or a repeat. The node is the test's own
// protocol peer (test/helpers/protocol-node.ts), so each batch comes when the test says.
import { afterAll, describe, expect, it } from 'vitest';
import {
  MAX_RUN_EVENT_BYTES,
  MAX_RUN_EVENT_BYTES_PER_RUN,
  type RunEventEntry,
  type RunEventServed,
} from '../../src/contract/run-events.js';
import { httpRequest } from '../helpers/http.js';
import { useSvcApi, type TestService } from '../helpers/svc-api.js';
import { paidUser, stopNodes, TEST_RUN_TIMING } from './execute-fixtures.js';
import { Follow, heldRun, type HeldRun } from './held-run.js';

const event = (seq: number, data: unknown, type: RunEventEntry['type'] = 'progress'): RunEventEntry => ({
  seq,
  attempt: 1,
  type,
  at: new Date().toISOString(),
  data,
});

function postEvents(service: TestService, held: Pick<HeldRun, 'run' | 'credential'>, events: RunEventEntry[], leaseId = held.run.lease_id) {
  return httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/events`, {
    method: 'POST',
    token: held.credential,
    body: { lease_id: leaseId, events },
  });
}

describe('run events', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  afterAll(() => stopNodes());
  const eventsUrl = (runId: string) => `${service.baseUrl}/v1/swarm/runs/${runId}/events`;

  it('stored once per seq with its attempt; followed live, cut, resumed with Last-Event-ID, then `end`', async () => {
    const held = await heldRun(service);
    const first = await postEvents(service, held, [
      event(0, { done: 0.1 }),
      event(1, { text: 'partial' }, 'output'),
      event(2, { done: 0.5 }),
    ]);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({ stored_events: 3, truncated: false, cancel: false });
    // A batch sent again (its answer lost) is stored once; a custom event keeps its name; U+0000 in data is kept.
    const again = await postEvents(service, held, [
      event(2, { done: 0.5 }),
      { ...event(3, { nul: 'a\u0000b' }, 'custom'), name: 'step.done' },
    ]);
    expect(again.body).toEqual({ stored_events: 4, truncated: false, cancel: false });

    const follow = await Follow.open(eventsUrl(held.run.run_id), held.user.token);
    expect(follow.contentType).toMatch(/^text\/event-stream/);
    await follow.waitFor('run_event', 4);
    expect(follow.named<RunEventServed>('run_event')).toEqual([
      expect.objectContaining({ seq: 0, attempt: 1, type: 'progress', name: null, data: { done: 0.1 } }),
      expect.objectContaining({ seq: 1, type: 'output', data: { text: 'partial' } }),
      expect.objectContaining({ seq: 2, data: { done: 0.5 } }),
      expect.objectContaining({ seq: 3, type: 'custom', name: 'step.done', data: { nul: 'a\u0000b' } }),
    ]);
    // Live: sent once the follower has the events before it, so it can only come through the open stream.
    await postEvents(service, held, [event(4, { done: 0.6 })]);
    await follow.waitFor('run_event', 5);
    follow.close();
    await follow.ended;
    // Cut; events come meanwhile; the follower reconnects with the id of the last one it got.
    await postEvents(service, held, [event(5, { done: 0.8 }), event(6, { done: 0.9 })]);
    const resumed = await Follow.open(eventsUrl(held.run.run_id), held.user.token, { 'last-event-id': follow.events.at(-1)!.id! });
    await resumed.waitFor('run_event', 2);
    held.finish();
    await resumed.ended;
    const seqs = [...follow.named<RunEventServed>('run_event'), ...resumed.named<RunEventServed>('run_event')].map((e) => e.seq);
    expect(seqs).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(resumed.named('end')).toEqual([{ run_id: held.run.run_id, status: 'succeeded', truncated: false, next_after: 6 }]);
    // A finished run's follow sends what it kept and ends at once.
    const after = await Follow.open(`${eventsUrl(held.run.run_id)}?after=4`, held.user.token);
    await after.ended;
    expect(after.named<RunEventServed>('run_event').map((e) => e.seq)).toEqual([5, 6]);
  });

  it('only from the node holding the run, to its user only; an event over 64 KiB refused; past 4 MiB nothing more kept', async () => {
    const held = await heldRun(service);
    const wrongLease = await postEvents(service, held, [event(0, {})], 'not-the-lease');
    expect([wrongLease.status, wrongLease.body.code]).toEqual([409, 'lease_lost']);
    const stranger = await paidUser(service, 0);
    const peek = await httpRequest(eventsUrl(held.run.run_id), { token: stranger.token });
    expect([peek.status, peek.body.code]).toEqual([404, 'run_not_found']);
    const huge = await postEvents(service, held, [event(0, 'x'.repeat(MAX_RUN_EVENT_BYTES))]);
    expect([huge.status, huge.body.code]).toEqual([413, 'payload_too_large']);
    expect(huge.body.remedy).toContain('artifact');
    // Events of 60 KiB each, 15 a batch, until the run's 4 MiB are used: then the answer says truncated.
    const chunk = 'y'.repeat(60 * 1024);
    const fit = Math.floor(MAX_RUN_EVENT_BYTES_PER_RUN / (chunk.length + 2));
    let seq = 0;
    let last: { stored_events: number; truncated: boolean } = { stored_events: 0, truncated: false };
    while (!last.truncated) {
      const batch = Array.from({ length: 15 }, () => event(seq++, chunk));
      const answer = await postEvents(service, held, batch);
      expect(answer.status, answer.text).toBe(200);
      last = answer.body;
      expect(seq).toBeLessThan(200);
    }
    expect(last).toEqual({ stored_events: fit, truncated: true, cancel: false });
    expect((await postEvents(service, held, [event(seq, 1)])).body).toEqual({ stored_events: fit, truncated: true, cancel: false });
    held.finish();
  });
});

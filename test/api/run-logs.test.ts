// docs/api.md "Run logs": the node holding a run sends its log in batches (seq from 0, a repeat stored once, the cap
// counted here too); the run's user reads it a page at a time, or follows it as Server-Sent Events until the run
// ends, on whichever instance; stored logs expire 30 days after their run ended. The node is the test's own
// protocol peer (test/helpers/protocol-node.ts), so each batch comes when the test says.
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { LogEntry } from '../../src/contract/jobs.js';
import {
  LOG_TRUNCATION_TEXT,
  MAX_LOG_BYTES_PER_RUN,
  MAX_LOG_LINE_CHARS,
  RUN_DATA_RETENTION_DAYS,
} from '../../src/contract/run-log-limits.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { MovableClock } from '../helpers/clock.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { useSvcApi, type TestService } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { testEngine } from '../helpers/test-engine.js';
import { TEST_RUN_TIMING, paidUser, stopNodes } from './execute-fixtures.js';
import { Follow, heldRun, type HeldRun } from './held-run.js';

const entry = (seq: number, text: string, stream: LogEntry['stream'] = 'stdout'): LogEntry => ({
  seq,
  stream,
  at: new Date().toISOString(),
  text,
});

function postLogs(service: TestService, held: Pick<HeldRun, 'run' | 'credential'>, entries: LogEntry[], leaseId = held.run.lease_id) {
  return httpRequest(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/logs`, {
    method: 'POST',
    token: held.credential,
    body: { lease_id: leaseId, entries },
  });
}

function readLogs(service: TestService, token: string, runId: string, query = '') {
  return httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}/logs${query}`, { token });
}

describe('run logs', () => {
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING });
  afterAll(() => stopNodes());

  it('a batch from the node holding the run is stored once per seq; its user reads it back a page at a time', async () => {
    const held = await heldRun(service);
    const first = await postLogs(service, held, [entry(0, 'starting'), entry(1, 'a warning', 'stderr'), entry(2, 'working')]);
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({
      stored_bytes: 'starting'.length + 'a warning'.length + 'working'.length,
      truncated: false,
      cancel: false,
    });
    // The same batch again (its answer was lost), then one that overlaps it: each seq is stored once.
    expect((await postLogs(service, held, [entry(0, 'starting'), entry(1, 'a warning', 'stderr'), entry(2, 'working')])).body).toEqual(
      first.body,
    );
    const overlap = await postLogs(service, held, [
      entry(2, 'working, sent again'),
      entry(3, 'nul\u0000 and esc\u001b[2J kept'),
      entry(4, 'done'),
    ]);
    expect(overlap.body.stored_bytes).toBe(first.body.stored_bytes + Buffer.byteLength('nul\uFFFD and esc\u001b[2J kept') + 'done'.length);

    const all = await readLogs(service, held.user.token, held.run.run_id);
    expect(all.status, all.text).toBe(200);
    expect(all.body).toMatchObject({
      run_id: held.run.run_id,
      truncated: false,
      finished: false,
      status: 'running',
      next_after: 4,
      expires_at: null,
      expired: false,
    });
    expect(all.body.entries.map((log: LogEntry) => [log.seq, log.stream, log.text])).toEqual([
      [0, 'stdout', 'starting'],
      [1, 'stderr', 'a warning'],
      [2, 'stdout', 'working'],
      // Stored as text on both engines: NUL (which PostgreSQL's text cannot hold) as U+FFFD, the rest as it came.
      [3, 'stdout', 'nul\uFFFD and esc\u001b[2J kept'],
      [4, 'stdout', 'done'],
    ]);
    const page = await readLogs(service, held.user.token, held.run.run_id, '?after=1&limit=2');
    expect(page.body.entries.map((log: LogEntry) => log.seq)).toEqual([2, 3]);
    expect(page.body.next_after).toBe(3);

    held.finish();
    await waitFor(
      async () => ((await readLogs(service, held.user.token, held.run.run_id)).body.finished ? true : undefined),
      'the run to finish',
    );
    const ended = await readLogs(service, held.user.token, held.run.run_id, '?after=4');
    expect(ended.body).toMatchObject({ entries: [], finished: true, status: 'succeeded', next_after: 4 });
    expect(Date.parse(ended.body.expires_at) - Date.now()).toBeGreaterThan((RUN_DATA_RETENTION_DAYS - 1) * DAY_MS);
    // The node that finished the run, with its lease: a last batch whose answer was lost is still taken.
    expect((await postLogs(service, held, [entry(5, 'late')])).status).toBe(200);
  });

  it('refuses a batch without the lease: another lease or node 409 lease_lost, another user 404; nothing stored', async () => {
    const held = await heldRun(service);
    const wrongLease = await postLogs(service, held, [entry(0, 'x')], 'not-the-lease');
    expect(wrongLease.status).toBe(409);
    expect(wrongLease.body.code).toBe('lease_lost');
    const sameUsersOtherNode = await enrollNode(service.baseUrl, held.user.email);
    const other = await postLogs(service, { run: held.run, credential: sameUsersOtherNode.credential }, [entry(0, 'x')]);
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('lease_lost');
    const stranger = await enrollNode(service.baseUrl, (await paidUser(service, 0)).email);
    const foreign = await postLogs(service, { run: held.run, credential: stranger.credential }, [entry(0, 'x')]);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('run_not_found');
    expect((await readLogs(service, held.user.token, held.run.run_id)).body.entries).toEqual([]);
    held.finish();
  });

  it("a run of another user and an unknown run are both 404 run_not_found; the log is the user's, not a node's", async () => {
    const held = await heldRun(service);
    await postLogs(service, held, [entry(0, 'private')]);
    const stranger = await paidUser(service, 0);
    for (const runId of [held.run.run_id, randomUUID()]) {
      for (const query of ['', '?follow=1']) {
        const seen = await readLogs(service, stranger.token, runId, query);
        expect(seen.status).toBe(404);
        expect(seen.body.code).toBe('run_not_found');
        expect(seen.text).not.toContain('private');
      }
    }
    expect((await readLogs(service, held.credential, held.run.run_id)).status).toBe(401);
    held.finish();
  });

  it('past 4 MiB: one truncation marker, stored once in place of the first entry over, and nothing after', async () => {
    const held = await heldRun(service);
    const line = 'x'.repeat(MAX_LOG_LINE_CHARS);
    const fit = MAX_LOG_BYTES_PER_RUN / MAX_LOG_LINE_CHARS;
    let last: Awaited<ReturnType<typeof postLogs>> | undefined;
    for (let seq = 0; seq < fit + 40; seq += 50) {
      last = await postLogs(
        service,
        held,
        Array.from({ length: 50 }, (_, i) => entry(seq + i, line)),
      );
      expect(last.status, last.text).toBe(200);
    }
    expect(last!.body).toEqual({ stored_bytes: MAX_LOG_BYTES_PER_RUN, truncated: true, cancel: false });
    // Sent again, or more after it: the log stays as it is.
    expect((await postLogs(service, held, [entry(fit, line), entry(fit + 100, 'more')])).body.stored_bytes).toBe(MAX_LOG_BYTES_PER_RUN);
    const logs = await readLogs(service, held.user.token, held.run.run_id, `?after=${fit - 2}`);
    expect(logs.body.truncated).toBe(true);
    expect(logs.body.entries.map((log: LogEntry) => [log.seq, log.stream, log.text.length])).toEqual([
      [fit - 1, 'stdout', MAX_LOG_LINE_CHARS],
      [fit, 'node', LOG_TRUNCATION_TEXT.length],
    ]);
    expect(logs.body.entries[1].text).toBe(LOG_TRUNCATION_TEXT);
    held.finish();

    // The node's own marker ends a log too.
    const cut = await heldRun(service);
    expect(
      (await postLogs(service, cut, [entry(0, 'a'), entry(1, LOG_TRUNCATION_TEXT, 'node'), entry(2, 'after the marker')])).body,
    ).toEqual({ stored_bytes: 1, truncated: true, cancel: false });
    const cutLogs = await readLogs(service, cut.user.token, cut.run.run_id);
    expect(cutLogs.body.entries.map((log: LogEntry) => log.seq)).toEqual([0, 1]);
    expect(cutLogs.body.truncated).toBe(true);
    cut.finish();
  });

  it("the answer to a batch says cancel once the run's user asked to cancel it", async () => {
    const held = await heldRun(service);
    expect((await postLogs(service, held, [entry(0, 'before')])).body.cancel).toBe(false);
    // What POST /v1/swarm/runs/{run_id}/cancel records for a running run (docs/api.md "Cancel").
    service.db.prepare('UPDATE runs SET cancel_requested_at = ? WHERE run_id = ?').run(Date.now(), held.run.run_id);
    expect((await postLogs(service, held, [entry(1, 'after')])).body.cancel).toBe(true);
    held.finish({ status: 'failed', output: { error: 'cancelled', message: 'the run was cancelled by its user' } });
  });

  it('?follow=1: what is stored, then each entry as it is stored, then `end` with how the run ended', async () => {
    const held = await heldRun(service);
    await postLogs(service, held, [entry(0, 'first'), entry(1, 'second', 'stderr')]);
    const url = `${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/logs?follow=1`;
    const follow = await Follow.open(url, held.user.token);
    expect(follow.contentType).toMatch(/^text\/event-stream/);
    await follow.waitForSeq(1);
    // Sent only once the follower has the entries before it: it can only come through the open stream.
    await postLogs(service, held, [entry(2, 'third')]);
    await follow.waitForSeq(2);
    expect(follow.end()).toBeUndefined();
    held.finish({ status: 'failed', output: { error: 'exit', message: 'the agent exited with code 3' } });
    await follow.ended;
    expect(follow.logs().map((log) => [log.seq, log.stream, log.text])).toEqual([
      [0, 'stdout', 'first'],
      [1, 'stderr', 'second'],
      [2, 'stdout', 'third'],
    ]);
    expect(follow.events.filter((event) => event.event === 'log').map((event) => event.id)).toEqual(['0', '1', '2']);
    expect(follow.end()).toEqual({ run_id: held.run.run_id, status: 'failed', error: 'exit', truncated: false, next_after: 2 });

    // A finished run's follow sends the rest and ends at once; ?after and Last-Event-ID start after an entry.
    const after = await Follow.open(`${url}&after=0`, held.user.token);
    await after.ended;
    expect(after.logs().map((log) => log.seq)).toEqual([1, 2]);
    const resumed = await Follow.open(url, held.user.token, { 'last-event-id': '1' });
    await resumed.ended;
    expect(resumed.logs().map((log) => log.seq)).toEqual([2]);
    expect(resumed.end()).toMatchObject({ status: 'failed', error: 'exit' });
  });
});

describe('run logs: a follow when the service stops', () => {
  // A lease that outlasts the test: the run is still running when the service stops, whatever the machine's load.
  const service = useSvcApi({ runTiming: { ...TEST_RUN_TIMING, leaseMs: 120_000 } });
  afterAll(() => stopNodes());

  it('ends without `end` (the client asks again with ?after) and holds no stop: the drain ends it at once', async () => {
    const held = await heldRun(service);
    await postLogs(service, held, [entry(0, 'running')]);
    const follow = await Follow.open(`${service.baseUrl}/v1/swarm/runs/${held.run.run_id}/logs?follow=1`, held.user.token);
    await follow.waitForSeq(0);
    await stopNodes();
    // A follow that held the drain would hold close() for its whole grace, past this test's own timeout.
    await service.close({ graceMs: 120_000 });
    await follow.ended;
    expect(follow.end()).toBeUndefined();
  });
});

describe('run logs: retention', () => {
  const clock = new MovableClock();
  const service = useSvcApi({ runTiming: TEST_RUN_TIMING, clock });
  afterAll(() => stopNodes());

  it(`removes a log ${RUN_DATA_RETENTION_DAYS} days after its run ended, and keeps one whose run ended later`, async () => {
    const old = await heldRun(service);
    await postLogs(service, old, [entry(0, 'old')]);
    // Its events go with it.
    const events = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${old.run.run_id}/events`, {
      method: 'POST',
      token: old.credential,
      body: { lease_id: old.run.lease_id, events: [{ seq: 0, attempt: 1, type: 'progress', at: new Date().toISOString(), data: 1 }] },
    });
    expect(events.status, events.text).toBe(200);
    old.finish();
    await waitFor(
      async () => ((await readLogs(service, old.user.token, old.run.run_id)).body.finished ? true : undefined),
      'the first run to finish',
    );
    clock.advance((RUN_DATA_RETENTION_DAYS - 1) * DAY_MS);
    const recent = await heldRun(service, old.user);
    await postLogs(service, recent, [entry(0, 'recent')]);
    recent.finish();
    await waitFor(
      async () => ((await readLogs(service, recent.user.token, recent.run.run_id)).body.finished ? true : undefined),
      'the second run to finish',
    );
    clock.advance(DAY_MS + 60_000);
    // A token of now: the first one's 30 days are over too.
    const { token } = await paidUser(service, 0, old.user.email);
    const expired = await waitFor(async () => {
      const logs = await readLogs(service, token, old.run.run_id);
      return logs.body.expired ? logs : undefined;
    }, 'the first log to expire');
    expect(expired.body).toMatchObject({ entries: [], expired: true, finished: true });
    const storedEvents = () =>
      (service.db.prepare('SELECT COUNT(*) AS n FROM run_event_entries WHERE run_id = ?').get(old.run.run_id) as { n: number }).n;
    await waitFor(async () => (storedEvents() === 0 ? true : undefined), "the first run's events to expire");
    expect((await readLogs(service, token, recent.run.run_id)).body).toMatchObject({
      expired: false,
      entries: [{ seq: 0, text: 'recent' }],
    });
  });
});

describe.skipIf(testEngine() !== 'postgres')('run logs: two instances on one PostgreSQL database', () => {
  // One data directory: the same database and the same signing keys, as instances behind one load balancer.
  let dataDir: string | undefined;
  const shared = () => ({ dataDir: (dataDir ??= tempDir('svc-logs-shared-')), runTiming: TEST_RUN_TIMING });
  const first = useSvcApi(shared);
  const second = useSvcApi(shared);
  afterAll(() => stopNodes());

  it('a follower on one instance gets the entries the node sends to the other, and the end', async () => {
    const held = await heldRun(first);
    const follow = await Follow.open(`${second.baseUrl}/v1/swarm/runs/${held.run.run_id}/logs?follow=1`, held.user.token);
    expect((await postLogs(first, held, [entry(0, 'to the first instance')])).status).toBe(200);
    await follow.waitForSeq(0);
    held.finish();
    await follow.ended;
    expect(follow.end()).toMatchObject({ status: 'succeeded', next_after: 0 });
  });
});

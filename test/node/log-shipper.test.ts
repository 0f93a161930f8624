// The node's side of a run's log (docs/api.md "Run logs"): the shipper against the real svc-api over HTTP, through
// the node's own client. Lines are made from the agent's bytes as they come (UTF-8 across chunks, CRLF, a line too
// long cut with a mark) and redacted before they leave; past the cap the node itself ends the log with one marker and
// sends nothing more; a batch that failed is sent again with the lease, stored once; a lost lease ends the shipping;
// the service's cancel reaches the run; and a service that does not answer holds the end of the log only its bound.
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogBatch, LogEntry } from '../../src/contract/jobs.js';
import { LOG_LINE_CUT_MARK, LOG_TRUNCATION_TEXT, MAX_LOG_BYTES_PER_RUN, MAX_LOG_LINE_CHARS } from '../../src/contract/run-log-limits.js';
import { systemClock } from '../../src/lib/clock.js';
import { NodeApi } from '../../src/node/service/node-api.js';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { LogShipper } from '../../src/node/work/log-shipper.js';
import { ATTEMPT_SEQ_SPAN, EventShipper } from '../../src/node/work/event-shipper.js';
import { MAX_RUN_EVENT_BYTES_PER_RUN, type RunEventBatch } from '../../src/contract/run-events.js';
import { TEST_RUN_TIMING, execute, paidUser } from '../api/execute-fixtures.js';
import { waitFor } from '../helpers/funnel.js';
import { httpRequest } from '../helpers/http.js';
import { enrollNode } from '../helpers/protocol-node.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { removeTempDirs } from '../helpers/temp.js';

const AGENT = 'agent_ops_monitor_004';

describe('LogShipper', () => {
  let service: TestService;
  beforeAll(async () => {
    // A lease long enough that the test's run keeps it without polls.
    service = await startSvcApi({ runTiming: { ...TEST_RUN_TIMING, leaseMs: 120_000, pollHoldMs: 500 } });
  });
  afterAll(async () => {
    await service.close();
    removeTempDirs();
  });

  /** A run this node started for itself, leased to it at once: its id, lease, user's token and the node's API. */
  async function ownRun(baseUrl = service.baseUrl, deadlineMs?: number) {
    const user = await paidUser(service, 100);
    const node = await enrollNode(service.baseUrl, user.email);
    const serving = await httpRequest(`${service.baseUrl}/v1/swarm/nodes/self/agents/${AGENT}`, { method: 'PUT', token: node.credential });
    expect(serving.status, serving.text).toBe(200);
    const started = await execute(service, node.credential, { user_id: user.email, agent_id: AGENT });
    expect(started.status, started.text).toBe(202);
    const api = new NodeApi(new ServiceClient({ baseUrl, ...(deadlineMs === undefined ? {} : { deadlineMs }) }), node.credential);
    return { runId: started.body.run_id as string, leaseId: started.body.lease.lease_id as string, token: user.token, api };
  }

  const stored = async (token: string, runId: string): Promise<{ entries: LogEntry[]; truncated: boolean }> => {
    const entries: LogEntry[] = [];
    let after = -1;
    for (;;) {
      const page = await httpRequest(`${service.baseUrl}/v1/swarm/runs/${runId}/logs?after=${after}`, { token });
      entries.push(...page.body.entries);
      after = page.body.next_after;
      if (page.body.entries.length < 1000) return { entries, truncated: page.body.truncated };
    }
  };

  it('lines from the bytes as they come, redacted; past the cap the node sends one marker and nothing more', async () => {
    const run = await ownRun();
    const shipper = new LogShipper({
      leaseId: run.leaseId,
      send: (batch, signal) => run.api.postLogs(run.runId, batch, signal),
      clock: systemClock,
      redact: (text) => text.replaceAll('hunter2', '***'),
    });
    const accented = Buffer.from('héllo wörld\r\n');
    // A two-byte character split across two chunks, a CRLF, a secret, a line with no end before the stream's end.
    shipper.write('stdout', accented.subarray(0, 2));
    shipper.write('stdout', accented.subarray(2));
    shipper.write('stderr', Buffer.from('password is hunter2\n'));
    shipper.write('stdout', Buffer.from(`${'w'.repeat(MAX_LOG_LINE_CHARS + 10)}\n`));
    const line = `${'z'.repeat(1023)}\n`;
    const lines = 5 * 1024;
    for (let i = 0; i < lines; i += 64) shipper.write('stdout', Buffer.from(line.repeat(64)));
    shipper.write('stderr', Buffer.from('after the cap'));
    const shipped = await shipper.close(60_000);

    const log = await stored(run.token, run.runId);
    // The node made fewer entries than lines it was given: the cap is the node's own, not only the service's.
    expect(shipped).toEqual({ entries: log.entries.length, sent: log.entries.length, truncated: true, stoppedBy: undefined });
    expect(shipped.entries).toBeLessThan(lines);
    expect(log.truncated).toBe(true);
    expect(log.entries.slice(0, 3).map((entry) => [entry.seq, entry.stream, entry.text])).toEqual([
      [0, 'stdout', 'héllo wörld'],
      [1, 'stderr', 'password is ***'],
      [2, 'stdout', `${'w'.repeat(MAX_LOG_LINE_CHARS)}${LOG_LINE_CUT_MARK}`],
    ]);
    expect(log.entries.map((entry) => entry.seq)).toEqual(log.entries.map((_, index) => index));
    expect(log.entries.at(-1)).toMatchObject({ stream: 'node', text: LOG_TRUNCATION_TEXT });
    const bytes = log.entries.slice(0, -1).reduce((sum, entry) => sum + Buffer.byteLength(entry.text), 0);
    expect(bytes).toBeLessThanOrEqual(MAX_LOG_BYTES_PER_RUN);
    expect(bytes + 1023).toBeGreaterThan(MAX_LOG_BYTES_PER_RUN);
  });

  it('a batch that failed is sent again with the lease, each entry stored once', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(service.baseUrl).port) });
    try {
      // The client gives up within a second, so the shipper's own retry is what sends the batch again.
      const run = await ownRun(`http://127.0.0.1:${proxy.port}`, 1_000);
      let failed = 0;
      const send = (batch: LogBatch, signal: AbortSignal) =>
        run.api.postLogs(run.runId, batch, signal).catch((error: unknown) => {
          failed += 1;
          throw error;
        });
      const shipper = new LogShipper({ leaseId: run.leaseId, send, clock: systemClock, flushMs: 10 });
      proxy.cut();
      shipper.write('stdout', Buffer.from('one\ntwo\n'));
      await waitFor(async () => (failed > 0 ? true : undefined), 'the batch to fail while the service cannot be reached');
      proxy.restore();
      await waitFor(async () => ((await stored(run.token, run.runId)).entries.length === 2 ? true : undefined), 'the batch sent again');
      shipper.write('stdout', Buffer.from('three\n'));
      expect(await shipper.close(30_000)).toMatchObject({ entries: 3, sent: 3, stoppedBy: undefined });
      expect((await stored(run.token, run.runId)).entries.map((entry) => entry.text)).toEqual(['one', 'two', 'three']);
    } finally {
      await proxy.close();
    }
  });

  it('stops at a lost lease; tells the run when its user cancels it', async () => {
    const lost = await ownRun();
    const refused = new LogShipper({
      leaseId: 'not-its-lease',
      send: (batch, signal) => lost.api.postLogs(lost.runId, batch, signal),
      clock: systemClock,
    });
    refused.write('stdout', Buffer.from('never stored\n'));
    expect(await refused.close(30_000)).toEqual({ entries: 1, sent: 0, truncated: false, stoppedBy: 'lease_lost' });

    const run = await ownRun();
    let told = 0;
    const shipper = new LogShipper({
      leaseId: run.leaseId,
      send: (batch, signal) => run.api.postLogs(run.runId, batch, signal),
      clock: systemClock,
      flushMs: 10,
      onCancel: () => (told += 1),
    });
    // What POST /v1/swarm/runs/{run_id}/cancel records for a running run (docs/api.md "Cancel").
    service.db.prepare('UPDATE runs SET cancel_requested_at = ? WHERE run_id = ?').run(Date.now(), run.runId);
    shipper.write('stdout', Buffer.from('working\n'));
    await waitFor(async () => (shipper.cancelled.aborted ? true : undefined), 'the cancel to reach the run');
    shipper.write('stdout', Buffer.from('stopping\n'));
    await shipper.close(30_000);
    expect(told).toBe(1);
  });

  it('a service that does not answer holds the end of the log only its bound', async () => {
    const held = new Set<Socket>();
    const silent = createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const address = silent.address() as { port: number };
      const api = new NodeApi(new ServiceClient({ baseUrl: `http://127.0.0.1:${address.port}` }), 'svc_node_not_asked');
      const shipper = new LogShipper({ leaseId: 'lease', send: (batch, signal) => api.postLogs('run', batch, signal), clock: systemClock });
      shipper.write('stdout', Buffer.from('the last line\n'));
      expect(await shipper.close(300)).toEqual({ entries: 1, sent: 0, truncated: false, stoppedBy: 'deadline' });
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("a run's events: redacted, numbered from their attempt's span, and never held past what the service keeps of a run", async () => {
    const { runId, leaseId, api } = await ownRun();
    const sent: RunEventBatch[] = [];
    const events = new EventShipper({
      leaseId,
      attempt: 2,
      send: (batch, signal) => {
        sent.push(batch);
        return api.postRunEvents(runId, batch, signal);
      },
      clock: systemClock,
      redact: (text) => text.replaceAll('sk_event_secret', '***'),
    });
    events.emit({ type: 'custom', name: 'step', data: { key: 'sk_event_secret', note: 'kept' }, at: Date.now() });
    // 70 events of 63 KiB: more than the 4 MiB of data the service keeps of a run.
    const big = 'e'.repeat(63 * 1024);
    for (let i = 0; i < 70; i += 1) events.emit({ type: 'output', data: big, at: Date.now() });
    const shipping = await events.close(30_000);
    const entries = sent.flatMap((batch) => batch.events);
    const dataBytes = entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry.data)), 0);
    expect(dataBytes).toBeLessThanOrEqual(MAX_RUN_EVENT_BYTES_PER_RUN);
    expect(entries).toHaveLength(1 + Math.floor((MAX_RUN_EVENT_BYTES_PER_RUN - 40) / (big.length + 2)));
    expect(shipping.stoppedBy).toBeUndefined();
    expect(entries[0]).toMatchObject({
      seq: ATTEMPT_SEQ_SPAN,
      attempt: 2,
      type: 'custom',
      name: 'step',
      data: { key: '***', note: 'kept' },
    });
    expect(entries.at(-1)!.seq).toBe(ATTEMPT_SEQ_SPAN + entries.length - 1);
    const kept = service.db.prepare('SELECT data_json FROM run_event_entries WHERE run_id = ? ORDER BY seq LIMIT 1').get(runId);
    expect(kept).toEqual({ data_json: '{"key":"***","note":"kept"}' });
  });
});

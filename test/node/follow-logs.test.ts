// A follow of a run's log (docs/api.md "Run logs") whose stream goes silent without closing: what a proxy that
// stopped passing bytes, or a network gone away without a reset, leaves. Nothing ends that stream but the client's
// own watch: silent past its bound, it is taken for cut and asked again from its last entry. The service here is a
// stand-in for that broken path: its first answer goes silent after one entry, its second is what svc-api sends.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import type { LogEntry } from '../../src/contract/jobs.js';
import { followRunLogs } from '../../src/node/runs/run-logs.js';
import { ServiceClient } from '../../src/node/service/service-client.js';

const open: ServerResponse[] = [];
afterAll(() => {
  for (const response of open) response.destroy();
});

const entry = (seq: number, text: string): LogEntry => ({ seq, stream: 'stdout', at: new Date().toISOString(), text });
const event = (name: string, data: unknown, id?: number): string =>
  `event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;

describe('followRunLogs', () => {
  it('takes a stream silent past its bound for cut, and asks again after its last entry: each entry once', async () => {
    const asked: string[] = [];
    const server = createServer((request: IncomingMessage, response: ServerResponse) => {
      asked.push(request.url!);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      if (asked.length === 1) {
        // One entry, then nothing: neither more bytes nor a close.
        response.write(event('log', entry(0, 'first'), 0));
        open.push(response);
        return;
      }
      response.end(
        `${event('log', entry(0, 'first again'), 0)}${event('log', entry(1, 'second'), 1)}${event('end', { run_id: 'r', status: 'succeeded', error: null, truncated: false, next_after: 1 })}`,
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const seen: LogEntry[] = [];
      const end = await followRunLogs(new ServiceClient({ baseUrl: `http://127.0.0.1:${port}` }), 'token', 'r', {
        signal: new AbortController().signal,
        idleMs: 300,
        onEntry: (got) => seen.push(got),
      });
      expect(end).toMatchObject({ status: 'succeeded', next_after: 1 });
      expect(seen.map((got) => got.text)).toEqual(['first', 'second']);
      expect(asked).toEqual(['/v1/swarm/runs/r/logs?follow=1&after=-1', '/v1/swarm/runs/r/logs?follow=1&after=0']);
    } finally {
      for (const response of open) response.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

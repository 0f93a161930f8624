// The service client's calls and the signal a caller gives them (the daemon's stop, alive as long as the process):
// an abort still ends a call under way, and a call over leaves nothing on the signal, streamed or not
// (src/lib/linked-signal.ts: AbortSignal.any kept an entry in it per call).
import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClient } from '../../src/node/service/service-client.js';
import { dependantsOf } from '../helpers/abort-signal.js';
import { startSvcApi, type TestService } from '../helpers/svc-api.js';
import { removeTempDirs } from '../helpers/temp.js';

describe("the service client and its caller's signal", () => {
  let service: TestService;
  let silent: Server;

  beforeAll(async () => {
    service = await startSvcApi();
    // Takes the request and never answers: a call to it ends only by its signal or its deadline.
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
    await service.close();
    removeTempDirs();
  });

  it('leaves nothing on the signal once its calls are over, a streamed answer once its body is read', async () => {
    const client = new ServiceClient({ baseUrl: service.baseUrl });
    const stop = new AbortController();
    for (let call = 0; call < 20; call += 1) {
      const answer = await client.call({ method: 'GET', path: ServiceClient.PING_PATH, retrySafe: true, signal: stop.signal });
      expect(answer.status).toBe(200);
    }
    const streamed = await client.call<Readable>({
      method: 'GET',
      path: ServiceClient.PING_PATH,
      retrySafe: true,
      signal: stop.signal,
      streamBody: true,
    });
    // Until its body is done, an abort must still reach the stream.
    expect(getEventListeners(stop.signal, 'abort').length).toBe(1);
    const closed = new Promise((resolve) => streamed.body.once('close', resolve));
    for await (const chunk of streamed.body) void chunk;
    await closed;
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    expect(dependantsOf(stop.signal)).toBe(0);
  });

  it('an abort of the signal still ends a call under way, as interrupted', async () => {
    const client = new ServiceClient({ baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, deadlineMs: 600_000 });
    const stop = new AbortController();
    const call = client.call({ method: 'GET', path: ServiceClient.PING_PATH, retrySafe: true, signal: stop.signal, deadlineMs: 600_000 });
    await new Promise<void>((resolve) => silent.once('request', () => resolve()));
    stop.abort();
    await expect(call).rejects.toMatchObject({ code: 'interrupted' });
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
  });
});

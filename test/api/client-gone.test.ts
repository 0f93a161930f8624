// What the error handlers take for a client gone (src/api/http/problem.ts noteClientGone): Node's own errors for a
// connection closed under a request or under a streamed answer, each only while that connection is really gone.
// The streamed case was seen only under load (bench:fuzz case 8820 on PostgreSQL, a followed log pipelined before a
// request whose headers were over the cap), so its error is made here as Node makes it.
import { Socket } from 'node:net';
import { finished, PassThrough } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { noteClientGone } from '../../src/api/http/problem.js';

function prematureClose(): Promise<Error> {
  const stream = new PassThrough();
  const error = new Promise<Error>((resolve) => finished(stream, (failure) => resolve(failure!)));
  stream.destroy();
  return error;
}

function requestOn(socket: Socket, logged: string[]): FastifyRequest {
  return {
    raw: { destroyed: socket.destroyed, socket },
    routeOptions: { url: '/x' },
    log: { info: (_fields: unknown, msg: string) => logged.push(msg) },
  } as unknown as FastifyRequest;
}

describe('a client gone', () => {
  it('is a stream cut off under a closed connection, at info; the same error on a live connection is a failure', async () => {
    const error = await prematureClose();
    expect((error as NodeJS.ErrnoException).code).toBe('ERR_STREAM_PREMATURE_CLOSE');
    const logged: string[] = [];
    const gone = new Socket();
    gone.destroy();
    expect(noteClientGone(error, requestOn(gone, logged))).toBe(true);
    expect(logged).toEqual(['the client closed the connection before its request was answered']);
    const live = new Socket();
    expect(noteClientGone(error, requestOn(live, logged))).toBe(false);
    live.destroy();
  });
});

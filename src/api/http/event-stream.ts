// A follow's answer (docs/api.md "Run logs", "Run events"): Server-Sent Events that end when the client goes.
import type { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';

/** Sends what `open` makes as the answer's event stream; its signal aborts when the client went away. */
export function sendEventStream(reply: FastifyReply, open: (gone: AbortSignal) => Readable): FastifyReply {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  // no-transform and X-Accel-Buffering: proxies must pass each event on as it comes, not hold them.
  return reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-store, no-transform')
    .header('x-accel-buffering', 'no')
    .send(open(gone.signal));
}

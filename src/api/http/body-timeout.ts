// A request body that stops arriving is cut off (docs/api.md "Conventions"): 408 problem+json, the connection
// closed. Without this a client that sent headers and one byte held its connection (and the memory of a request)
// for good: Node's own requestTimeout is off under fastify, and it would bound the whole request anyway, which a
// long upload, or a stream of logs, legitimately exceeds. So the rule is an idle time and a minimum rate, per route:
// a route that streams (`config: { bodyTimeout: false }`, or its own figures) is never cut while bytes keep coming.
import type { ServerResponse } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';

export interface BodyTimeout {
  /** The longest the body may pause between two of its bytes. */
  idleMs: number;
  /**
   * From `idleMs` after the body began on, it must have come at this average rate (bytes a second) since it
   * began; 0: no minimum, only the idle time.
   */
  minBytesPerSecond: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** This route's rule for its body (a stream of logs: its own idle time, or false for none); the service's otherwise. */
    bodyTimeout?: Partial<BodyTimeout> | false;
  }
}

/** The service's rule unless a route has its own (svc-api --body-idle-seconds, --body-min-rate). */
export const DEFAULT_BODY_TIMEOUT: BodyTimeout = { idleMs: 30_000, minBytesPerSecond: 1024 };

/**
 * Watches the body of every request that has one, by the route's rule or `defaults`. The watch lives as long as its
 * request: no client input may outlive its request and end the process (docs/api.md "Conventions").
 */
export function cutStalledBodies(app: FastifyInstance, defaults: BodyTimeout): void {
  const watching = new WeakSet<FastifyRequest>();
  app.addHook('preParsing', async (request, reply, payload) => {
    const own = request.routeOptions.config?.bodyTimeout;
    if (own === false || !hasBody(request)) return payload;
    watching.add(request);
    return watchBody(payload, reply.raw, { ...defaults, ...own }, () => cutOff(request, reply));
  });
  // A body still unread when the answer goes out (413 on its Content-Length, 415, a GET's answer) is never read now:
  // its bytes would be taken for the next request, so the connection closes after the answer.
  app.addHook('onSend', async (request, reply) => {
    if (watching.has(request) && !request.raw.complete) reply.header('connection', 'close');
  });
}

function hasBody(request: FastifyRequest): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

function cutOff(request: FastifyRequest, reply: FastifyReply): SvcError {
  // The rest of the body will never be read: the connection cannot carry another request.
  reply.header('connection', 'close');
  request.log.info({ route: request.routeOptions.url }, 'request body cut off: it stopped arriving');
  return new SvcError('invalid_request', 'the request body stopped arriving; the request was cut off', {
    status: 408,
    remedy: 'Send the whole body without long pauses, then retry (a new connection).',
  });
}

/**
 * `payload` passed through, destroyed with `timeout()`'s error once the body is idle too long or too slow, and
 * ended with `response`: answered or its client gone, the request no longer has a body to wait for.
 */
function watchBody(payload: Readable, response: ServerResponse, rule: BodyTimeout, timeout: () => Error): Readable {
  const began = performance.now();
  let lastByteAt = began;
  let received = 0;
  let timer: NodeJS.Timeout | undefined;
  const deadline = (): number => {
    const idleEnds = lastByteAt + rule.idleMs;
    if (rule.minBytesPerSecond <= 0) return idleEnds;
    // received >= rate * (t - began - idle) holds until t = began + idle + received / rate.
    return Math.min(idleEnds, began + rule.idleMs + (received / rule.minBytesPerSecond) * 1000);
  };
  const watched = new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      received += chunk.length;
      lastByteAt = performance.now();
      done(null, chunk);
    },
    flush(done: TransformCallback) {
      clearTimeout(timer);
      done();
    },
  });
  // An 'error' nobody listens for is thrown, and ends the process. Whoever reads the body listens (fastify's parser, a
  // route's pipeline); a body cut off before its route reads it keeps the error for that reader (`errored`), and one
  // whose request was answered unread has nobody left to tell.
  watched.on('error', () => undefined);
  // Re-armed only when it fires, for the deadline as it then stands: a body that keeps flowing costs no timer work.
  const arm = (): void => {
    timer = setTimeout(
      () => {
        if (performance.now() >= deadline()) watched.destroy(timeout());
        else arm();
      },
      Math.max(1, deadline() - performance.now()),
    ).unref();
  };
  arm();
  watched.once('close', () => clearTimeout(timer));
  payload.once('error', (error) => watched.destroy(error));
  // A client gone mid-body: the request ends as an abort (logged as one, src/api/http/problem.ts), not a timeout.
  const abort = (): void => {
    if (!payload.readableEnded) watched.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  };
  payload.once('close', abort);
  // The answer's 'close' comes first when the client goes (then an abort, as above), or once it is sent.
  response.once('close', () => (response.writableFinished ? watched.destroy() : abort()));
  payload.pipe(watched);
  return watched;
}

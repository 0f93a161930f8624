// A request body that stops arriving is cut off (docs/api.md "Conventions"): 408 problem+json, the connection
// closed. Without this a client that sent headers and one byte held its connection (and the memory of a request)
// for good: Node's own requestTimeout is off under fastify, and it would bound the whole request anyway, which a
// long upload, or a stream of logs, legitimately exceeds. So the rule is an idle time and a minimum rate, per route:
// a route that streams (`config: { bodyTimeout: false }`, or its own figures) is never cut while bytes keep coming.
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

/** Watches the body of every request that has one, by the route's rule or `defaults`. */
export function cutStalledBodies(app: FastifyInstance, defaults: BodyTimeout): void {
  app.addHook('preParsing', async (request, reply, payload) => {
    const own = request.routeOptions.config?.bodyTimeout;
    if (own === false || !hasBody(request)) return payload;
    return watchBody(payload, { ...defaults, ...own }, () => cutOff(request, reply));
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

/** `payload` passed through, destroyed with `timeout()`'s error once the body is idle too long or too slow. */
function watchBody(payload: Readable, rule: BodyTimeout, timeout: () => Error): Readable {
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
  payload.once('close', () => {
    if (!payload.readableEnded) watched.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
  });
  payload.pipe(watched);
  return watched;
}

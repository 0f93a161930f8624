// The requests in flight, and what a request gets once the service is stopping (docs/operations.md "Stopping
// svc-api").
//
// Why not fastify's own close() for this — what fastify 5 (5.12) does, read in its source and tried: close() marks
// the routes closing (a request that still arrives gets a plain JSON 503 without Retry-After, not problem details),
// closes the listener, and runs the onClose hooks only once every connection has ended. It does wait for handlers
// in flight, but with no bound; and Node's server.close() reaps only the connections idle at that moment, so a
// keep-alive connection whose response is sent later stays open for keepAliveTimeout (72 s) and holds close() that
// long. So the service counts its requests itself, answers and closes connections during the drain here, and calls
// app.close() only when nothing is left.
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Still taken in while the service drains: it finishes work already in flight (a node's result of a run). */
    completesInFlightWork?: boolean;
  }
}
import { SvcError } from '../../contract/errors.js';

/** A stopped svc-api is usually back (or another one answers) within seconds: the client's next try. */
const RETRY_AFTER_SECONDS = 5;

export interface RequestDrain {
  readonly inFlight: number;
  /**
   * From now on a request gets 503, but those finishing work in flight (a node's result), and a connection is
   * closed once it has no request. The listener stays open for those results; closeConnections ends it.
   */
  begin(): void;
  /** Resolves true when no request is in flight, false when `signal` aborts first. */
  settled(signal: AbortSignal): Promise<boolean>;
  /** Every connection left (a client still sending its headers, say) is cut. */
  closeConnections(): void;
}

/** Call before listen: the hooks apply to every route. */
export function createRequestDrain(app: FastifyInstance): RequestDrain {
  let draining = false;
  let inFlight = 0;
  const whenIdle = new Set<() => void>();

  // Counted on the raw server, so every request counts, whichever route (or none) answers it; 'close' comes after
  // the response is sent or the client went away, whichever happens.
  app.server.on('request', (_request, response) => {
    inFlight += 1;
    response.once('close', () => {
      inFlight -= 1;
      // The connection may be idle now (a client that ignored Connection: close): it must not hold the stop.
      if (draining) app.server.closeIdleConnections();
      if (inFlight === 0) for (const resolve of whenIdle) resolve();
    });
  });

  app.addHook('onRequest', async (request) => {
    if (draining && request.routeOptions.config?.completesInFlightWork !== true) {
      throw new SvcError('service_unavailable', 'the service is shutting down', { retryAfterSeconds: RETRY_AFTER_SECONDS });
    }
  });
  // Every answer sent during the drain, the runs that finish included, tells the client not to reuse the connection.
  app.addHook('onSend', async (_request, reply) => {
    if (draining) reply.header('connection', 'close');
  });

  return {
    get inFlight() {
      return inFlight;
    },
    begin() {
      draining = true;
      // The ones idle now (keep-alive between requests) go; new ones are still accepted, for the results.
      app.server.closeIdleConnections();
    },
    settled(signal) {
      if (inFlight === 0) return Promise.resolve(true);
      if (signal.aborted) return Promise.resolve(false);
      return new Promise((resolve) => {
        const done = (idle: boolean): void => {
          whenIdle.delete(onIdle);
          signal.removeEventListener('abort', onAbort);
          resolve(idle);
        };
        const onIdle = (): void => done(true);
        const onAbort = (): void => done(false);
        whenIdle.add(onIdle);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    closeConnections() {
      app.server.close();
      app.server.closeAllConnections();
    },
  };
}

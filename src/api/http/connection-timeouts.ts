// How long a connection may carry no request being answered (docs/api.md "Conventions"): one that sends nothing, or
// never finishes its headers, is closed (408) `headersMs` after it opened or its request's first byte; one idle
// between two requests is closed `keepAliveMs` after its last answer. A request whose headers are in is never cut by
// either: a node's held poll sends nothing for up to a minute, an execute waits for its run, and a body has its own
// rule (body-timeout.ts). Both are Node's own timers, read in its source and tried: `headersTimeout` is checked
// every `connectionsCheckingInterval`, 30 s by default (Node's own 60 s so came to 60 to 90 s), here every second at
// most; `requestTimeout` stays off (fastify's default), since it would bound a whole request, the long ones too.
import type { FastifyServerOptions } from 'fastify';
import type { ServerOptions } from 'node:http';

export interface ConnectionTimeouts {
  /** From a connection's opening, or its request's first byte, until that request's headers are all in. */
  headersMs: number;
  /** A connection idle after an answer, before its next request. */
  keepAliveMs: number;
}

/**
 * svc-api --headers-timeout-seconds, --keep-alive-seconds. 72 s between requests is fastify's own, above the idle
 * timeout of common load balancers (60 s), which must close an idle connection before the service does.
 */
export const DEFAULT_CONNECTION_TIMEOUTS: ConnectionTimeouts = { headersMs: 30_000, keepAliveMs: 72_000 };

/** The fastify options that set `timeouts` on its HTTP server. */
export function connectionTimeoutOptions(
  timeouts: ConnectionTimeouts,
): Pick<FastifyServerOptions, 'keepAliveTimeout'> & { http: ServerOptions } {
  return {
    keepAliveTimeout: timeouts.keepAliveMs,
    http: {
      headersTimeout: timeouts.headersMs,
      // Node refuses a headersTimeout above requestTimeout, whose default (300 s) fastify turns off after creating it.
      requestTimeout: 0,
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    },
  };
}

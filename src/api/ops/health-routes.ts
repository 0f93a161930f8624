// GET /healthz and GET /readyz (docs/api.md "Operations"). Liveness says only that the process answers: a
// supervisor restarts it when it does not, and a database outage must not make it restart a healthy process.
// Readiness says whether this instance should get traffic: the database answers and its schema is the one this
// program expects; a load balancer takes it out of rotation on 503. A stopping instance answers 503 to both, as to
// every request, from its drain (request-drain.ts).
import type { FastifyPluginAsync } from 'fastify';
import { Type } from '@sinclair/typebox';
import { SvcError } from '../../contract/errors.js';
import type { ServiceMetrics } from './metrics.js';
import type { StoreProbe } from './store-probe.js';

/** A database that has not answered in this long is as good as down for a request; probes usually time out at 1 to 5 s. */
export const READINESS_TIMEOUT_MS = 2_000;
/** What the 503 asks a client to wait: about one probe period of a load balancer. */
const NOT_READY_RETRY_AFTER_SECONDS = 5;

const HealthResponse = Type.Object({ status: Type.Literal('ok') });
const ReadyResponse = Type.Object({
  status: Type.Literal('ready'),
  database: Type.Object({ schema_version: Type.Integer() }),
});

export interface HealthDeps {
  probe: StoreProbe;
  metrics: ServiceMetrics;
}

export function healthRoutes(deps: HealthDeps): FastifyPluginAsync {
  return async (app) => {
    app.get('/healthz', { schema: { response: { 200: HealthResponse } } }, async () => ({ status: 'ok' as const }));

    app.get('/readyz', { schema: { response: { 200: ReadyResponse } } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      let status;
      try {
        await withTimeout(deps.probe.ping(), READINESS_TIMEOUT_MS);
        status = await withTimeout(deps.probe.migrationStatus(), READINESS_TIMEOUT_MS);
      } catch (error) {
        deps.metrics.databaseError('readiness');
        // The engine's message stays in the log: a 503 never carries internals (problem.ts).
        request.log.warn({ err: error }, 'readiness: the database did not answer');
        throw notReady(
          error instanceof TimeoutError ? `the database did not answer within ${READINESS_TIMEOUT_MS} ms` : 'the database is not reachable',
        );
      }
      if (status.applied !== status.expected) {
        throw notReady(
          status.applied < status.expected
            ? `the database schema is at version ${status.applied}; this program needs ${status.expected} (migrations pending)`
            : `the database schema is at version ${status.applied}, newer than this program's ${status.expected}`,
        );
      }
      return { status: 'ready' as const, database: { schema_version: status.applied } };
    });
  };
}

function notReady(why: string): SvcError {
  return new SvcError('service_unavailable', `not ready: ${why}`, { retryAfterSeconds: NOT_READY_RETRY_AFTER_SECONDS });
}

class TimeoutError extends Error {}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new TimeoutError()), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

// X-Request-Id (docs/api.md "Operations"): a proxy's or client's id is taken when it is safe to log and to echo,
// otherwise the service makes one; either way it names the request in every log line (fastify's child logger) and
// goes back on every answer, errors included, so a report from a client can be found in the logs.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';
/** The log field that carries it (fastify's requestIdLogLabel), snake_case like the other fields of our logs. */
export const REQUEST_ID_LOG_LABEL = 'request_id';

/**
 * What an id may be: the characters of UUIDs, ULIDs, base64 and the usual trace ids, up to 128. Nothing that could
 * split a log line or a header (controls, spaces, quotes, commas), and no length that could swell every log line.
 */
const ACCEPTED_ID = /^[A-Za-z0-9._~:/+=@-]{1,128}$/;

/** fastify's genReqId: the request's own id when acceptable, else a fresh UUID. */
export function requestIdOf(request: Pick<IncomingMessage, 'headers'>): string {
  const given = request.headers[REQUEST_ID_HEADER];
  // A header sent twice arrives as one joined value or an array: neither is one id.
  return typeof given === 'string' && ACCEPTED_ID.test(given) ? given : randomUUID();
}

/** Sets the header first thing, so an answer from a later hook (401, 429, 503 while draining) carries it too. */
export function echoRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
}

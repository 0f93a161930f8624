// spec §4 "All bodies are JSON": the routes of one plugin scope take application/json only. Fastify also parses
// text/plain by default, which would turn a text body into a 400 about its shape instead of a clear 415.
import type { FastifyInstance } from 'fastify';

export interface JsonBodyOptions {
  /**
   * Endpoints whose body is optional (enroll, sandbox confirm, verify with only a bearer header) also take an
   * empty body sent with Content-Type: application/json, which many HTTP clients send by default.
   */
  allowEmpty?: boolean;
}

/** Call at the top of a route plugin; applies to that plugin's routes only (fastify encapsulation). */
export function acceptJsonBodiesOnly(app: FastifyInstance, options: JsonBodyOptions = {}): void {
  app.removeContentTypeParser('text/plain');
  if (!options.allowEmpty) return;
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    request.rawBody = bytes;
    if (bytes.toString('utf8').trim() === '') {
      done(null, undefined);
      return;
    }
    parseJson(request, bytes.toString('utf8'), done);
  });
}

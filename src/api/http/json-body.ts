// spec §4 "All bodies are JSON". One parser for every JSON body: it keeps the raw bytes (the webhook's signature is
// over exactly what was sent) and refuses bytes that are not UTF-8, which a lenient decode would store as U+FFFD
// (two different bodies, one stored value), and U+0000 in any string or key (nul-input.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../../contract/json-depth.js';
import { findNul, nulRefused } from './nul-input.js';

export interface JsonBodyOptions {
  /**
   * Endpoints whose body is optional (enroll, sandbox confirm, verify with only a bearer header) also take an
   * empty body sent with Content-Type: application/json, which many HTTP clients send by default.
   */
  allowEmpty?: boolean;
}

/** docs/api.md "Error codes" `payload_too_large`: a JSON body is at most 64 KiB (routes that take more say so). */
export const MAX_BODY_BYTES = 64 * 1024;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text; 400 when its bytes are not UTF-8. */
export function decodeUtf8Body(bytes: Buffer): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new SvcError('invalid_request', 'the request body is not valid UTF-8', { remedy: 'Send the body encoded as UTF-8.' });
  }
}

/** Installs the JSON parser on `app` (and its child scopes): strict UTF-8, raw bytes kept, no NUL. */
export function parseJsonBodies(app: FastifyInstance, options: JsonBodyOptions = {}): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body, done) => {
    const bytes = body as Buffer;
    request.rawBody = bytes;
    let text: string;
    try {
      text = decodeUtf8Body(bytes);
    } catch (error) {
      done(error as SvcError, undefined);
      return;
    }
    if (options.allowEmpty && text.trim() === '') {
      done(null, undefined);
      return;
    }
    // Before parsing: a body nested tens of thousands deep overflowed the stack of what walks it after (a canonical
    // form, JSON.stringify) and answered 500 (docs/api.md "Conventions").
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      done(
        new SvcError('invalid_request', `the request body nests deeper than ${MAX_JSON_DEPTH} levels`, {
          remedy: `Send JSON nested at most ${MAX_JSON_DEPTH} levels deep.`,
        }),
        undefined,
      );
      return;
    }
    parseJson(request, text, (error, parsed) => {
      if (error !== null) return done(error, undefined);
      const nulAt = findNul(parsed, text, request.routeOptions.config?.nulAllowedIn);
      return nulAt === undefined ? done(null, parsed) : done(nulRefused('the request body', nulAt), undefined);
    });
  });
}

/** Call at the top of a route plugin; applies to that plugin's routes only (fastify encapsulation). */
export function acceptJsonBodiesOnly(app: FastifyInstance, options: JsonBodyOptions = {}): void {
  // Fastify also parses text/plain by default, which would turn a text body into a 400 about its shape instead of a
  // clear 415.
  app.removeContentTypeParser('text/plain');
  if (options.allowEmpty) parseJsonBodies(app, options);
}

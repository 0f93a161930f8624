// The pieces the tables of operations are written with (ops/openapi-operations.ts, ops/openapi-wallet-operations.ts):
// the shape of an operation's entry, and the answers, parameters and bodies several operations share.
import type { ErrorCode } from '../../contract/errors.js';
import { LOG_END_EVENT, LOG_EVENT } from '../../contract/jobs.js';

/** The credential of a route that checks it itself rather than through `config.auth` (http/auth.ts). */
export type OwnCredential =
  /** enroll: a deploy token, spent by the enrollment. */
  | 'deploy-token'
  /** A release: a deploy token not yet used (looked at, not spent), or a node credential. */
  | 'deploy-token-or-node'
  /** verify: the JWT to verify, as the bearer or in the body; every token question is answered 200. */
  | 'token-to-verify'
  /** A wallet page that answers without a session too, and more to one (the sign-in page, sign-out). */
  | 'console-session-optional'
  /** Public. */
  | 'none';

export type Schema = Record<string, unknown>;
export type Content = Record<string, { schema: Schema }>;
export interface AnswerDoc {
  description: string;
  content?: Content;
  headers?: Record<string, { description: string; schema: Schema }>;
}
export interface ParameterDoc {
  name: string;
  in: 'query' | 'header';
  required?: boolean;
  description: string;
  schema: Schema;
}

export interface OperationDoc {
  /** The operationId: a verb and what it acts on, camelCase, unique in the document. */
  id: string;
  summary: string;
  credential?: OwnCredential;
  /** Its own errors (error-codes.ts), besides those derived from its input, credential and limits. */
  errors?: ErrorCode[];
  /** Counted by a limit of its own (uploads an hour, re-sends a minute), besides `config.rateLimited`. */
  limited?: true;
  /** The body, where the route's schema does not describe it (bytes, an optional body, a form). */
  body?: { description: string; required: boolean; content: Content };
  /** Headers and query parameters the route reads without a schema for them. */
  parameters?: ParameterDoc[];
  /** Success answers the route's response schemas do not give (other content types, no content, a redirect). */
  answers?: Record<string, AnswerDoc>;
}

export const LOG_EVENTS =
  `Server-Sent Events: a \`${LOG_EVENT}\` event per entry (its seq as the id), then one \`${LOG_END_EVENT}\` event once the run ` +
  'finished; a comment line keeps a quiet stream open (docs/api.md "Run logs")';
export const BYTES: Schema = { type: 'string', format: 'binary' };
export const TEXT: Schema = { type: 'string' };
export const HTML = (description: string): AnswerDoc => ({ description, content: { 'text/html': { schema: TEXT } } });
export const RUN_EVENTS =
  'Server-Sent Events: a `run_event` event per event (its seq as the id), then one `end` event once the run finished ' +
  '(docs/api.md "Run events")';
export const STREAMED_EXECUTE =
  'Server-Sent Events: `run` (the run as the execute made or found it), a `run_event` per event (its seq as the id), ' +
  'then `result` (the run as a 200 answer gives it); the client leaving does not cancel the run (docs/api.md "A streamed execute")';
export const EVENTS = (description: string, events: string = LOG_EVENTS): AnswerDoc => ({
  description,
  content: { 'text/event-stream': { schema: { type: 'string', description: events } } },
});
export const SEE_OTHER = (description: string): AnswerDoc => ({
  description,
  headers: { Location: { description: 'The page to show next, relative to this one', schema: TEXT } },
});

export const query = (name: string, description: string): ParameterDoc => ({ name, in: 'query', description, schema: TEXT });
export const header = (name: string, description: string): ParameterDoc => ({ name, in: 'header', description, schema: TEXT });
export const IDEMPOTENCY_KEY: ParameterDoc = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  description: 'The client\'s key of this run: printable ASCII, at most 255 characters (docs/api.md "POST /v1/swarm/execute")',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};
export const PREFER = header('Prefer', "wait=<seconds> (at most the service's wait, 30 s by default) or respond-async (RFC 7240)");
export const LAST_EVENT_ID = header('Last-Event-ID', 'An EventSource that reconnects: the seq of the last entry it got (?after wins)');
export const FORM = (description: string): OperationDoc['body'] => ({
  description,
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', additionalProperties: TEXT } } },
});

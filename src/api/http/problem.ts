// docs/decisions/0003-errors-as-problem-details.md: every failure leaves as RFC 9457 problem details with a stable
// `code`, mapped here and nowhere else. A 5xx never carries the underlying message or a stack trace.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';
import { isDatabaseUnavailable } from '../store/database-unavailable.js';

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Long enough for an operator's alert to fire, short enough that a client retrying within its budget may get in. */
const STORAGE_FULL_RETRY_AFTER_SECONDS = 30;
/** A PostgreSQL restart or fail-over takes seconds; clients retry after this and usually get in. */
const DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export function toSvcError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  // A full disk (SQLite maps ENOSPC to it) or a database at its size cap. The write failed inside its transaction,
  // which better-sqlite3 rolled back, so nothing of the request stays and a retry later is safe. A 503, not a 500:
  // the service is sound, it is out of room, and clients already wait and retry on 503 (and the daemon pauses).
  if ((error as { code?: unknown } | null)?.code === 'SQLITE_FULL') {
    return new SvcError('service_unavailable', "the service's storage is full; this request changed nothing", {
      retryAfterSeconds: STORAGE_FULL_RETRY_AFTER_SECONDS,
      remedy: "Retry later; the service's operator must free disk space first.",
      cause: error,
    });
  }
  if (isDatabaseUnavailable(error)) {
    return new SvcError('service_unavailable', "the service's database is unreachable; this request changed nothing", {
      retryAfterSeconds: DATABASE_UNAVAILABLE_RETRY_AFTER_SECONDS,
      remedy: 'Retry later, with the same Idempotency-Key for an execute.',
      cause: error,
    });
  }
  const fastifyError = error as Partial<FastifyError> & { validation?: ValidationIssue[] };
  if (Array.isArray(fastifyError.validation)) {
    const errors = fastifyError.validation.map(describeValidationIssue);
    const first = errors[0];
    return new SvcError('invalid_request', first ? `${first.path || 'body'}: ${first.message}` : 'the request is invalid', {
      extensions: { errors },
    });
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new SvcError('payload_too_large', 'the request body is larger than 64 KiB');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new SvcError('unsupported_media_type', 'the request body must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new SvcError('invalid_request', 'the request body is empty; send a JSON object');
    default:
      break;
  }
  const status = fastifyError.statusCode;
  if (error instanceof SyntaxError || (status === 400 && fastifyError.code?.startsWith('FST_ERR_CTP'))) {
    return new SvcError('invalid_request', 'the request body is not valid JSON');
  }
  if (status === 429) return new SvcError('rate_limited', 'too many requests from this address');
  if (status === 413) return new SvcError('payload_too_large', 'the request body is larger than 64 KiB');
  if (status === 415) return new SvcError('unsupported_media_type', 'the request body must be application/json');
  if (status === 404) return new SvcError('not_found', 'no such resource');
  if (status !== undefined && status >= 400 && status < 500) {
    return new SvcError('invalid_request', 'the request is invalid');
  }
  return new SvcError('internal', 'the service failed to handle the request', { cause: error });
}

function describeValidationIssue(issue: ValidationIssue): { path: string; message: string } {
  const base = issue.instancePath ?? '';
  const missing = issue.params?.missingProperty;
  if (typeof missing === 'string') return { path: `${base}/${missing}`, message: 'is required' };
  const extra = issue.params?.additionalProperty;
  if (typeof extra === 'string') return { path: `${base}/${extra}`, message: 'is not a known field' };
  const allowed = issue.params?.allowedValue ?? issue.params?.allowedValues;
  if (allowed !== undefined) {
    return { path: base, message: `must be one of: ${[allowed].flat().join(', ')}` };
  }
  return { path: base, message: issue.message ?? 'is invalid' };
}

export function sendProblem(reply: FastifyReply, error: SvcError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.code === 'unauthorized' || error.code === 'deploy_token_invalid' || error.code === 'email_code_invalid') {
    reply.header('www-authenticate', 'Bearer error="invalid_token"');
  }
  // RFC 9470 §3: the step-up challenge names the authentication age the resource needs.
  if (error.code === 'step_up_required') {
    reply.header(
      'www-authenticate',
      `Bearer error="insufficient_user_authentication", error_description="a sign-in within the last 15 minutes is required", max_age=${String(error.extensions.max_age ?? 900)}`,
    );
  }
  return reply.status(error.status).type('application/problem+json').send(error.toProblem());
}

export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (noteClientGone(error, request)) return reply;
  const svcError = toSvcError(error);
  if (svcError.status >= 500) request.log.error({ err: error }, 'request failed');
  return sendProblem(reply, svcError);
}

/**
 * True, having logged it at info, when `error` is Node's own for a request whose connection closed (or whose bytes
 * stopped making HTTP) before it was read whole. A client that went away mid-request (closed its tab, Ctrl+C, a
 * timeout of its own) is no failure of the service: info, not error, so that an error line always means something
 * to look at (docs/api.md "Conventions"). Every error handler asks this first: the API's and the console's.
 */
export function noteClientGone(error: unknown, request: FastifyRequest): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const aborted = request.raw.destroyed && code === 'ECONNRESET' && message === 'aborted';
  // A streamed answer (a followed log) whose connection closed under it: Node's streams say "Premature close".
  const cutOff = code === 'ERR_STREAM_PREMATURE_CLOSE' && request.raw.socket?.destroyed === true;
  if (!aborted && !cutOff) return false;
  request.log.info({ route: request.routeOptions.url ?? 'unmatched' }, 'the client closed the connection before its request was answered');
  return true;
}

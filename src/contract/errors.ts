// docs/decisions/0003-errors-as-problem-details.md: one typed error with a stable `code`. The HTTP status of each
// code lives here, beside the code, so the server and the client read the same table; the CLI maps codes to exit
// codes once.

import { ERROR_CODES, isErrorCode, type ErrorCode, type ErrorCodeInfo } from './error-codes.js';
export * from './error-codes.js';

/** RFC 9457 problem details as the service sends them; extra members (errors, wallet_login_url, …) allowed. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  remedy?: string;
  [extension: string]: unknown;
}

export function problemType(code: ErrorCode): string {
  return `urn:svc:problem:${code}`;
}

export interface SvcErrorOptions {
  remedy?: string;
  /** Extra members of the problem document (for example wallet_login_url, errors, balance_cents). */
  extensions?: Record<string, unknown>;
  /** HTTP status actually received, when it differs from the code's own (an unknown code from a newer service). */
  status?: number;
  /** Seconds, sent as Retry-After. */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** The message of anything thrown: an Error's own, or the thing as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly remedy: string | undefined;
  readonly extensions: Record<string, unknown>;
  readonly retryAfterSeconds: number | undefined;
  readonly #status: number | undefined;

  constructor(code: ErrorCode, message: string, options: SvcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SvcError';
    this.code = code;
    const info: ErrorCodeInfo = ERROR_CODES[code];
    this.remedy = options.remedy ?? info.remedy;
    this.extensions = options.extensions ?? {};
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.#status = options.status;
  }

  /** The HTTP status for this error (500 for client-only codes, which never reach a response). */
  get status(): number {
    const info: ErrorCodeInfo = ERROR_CODES[this.code];
    return this.#status ?? info.status ?? 500;
  }

  toProblem(): ProblemDetails {
    const info: ErrorCodeInfo = ERROR_CODES[this.code];
    return {
      ...this.extensions,
      type: problemType(this.code),
      title: info.title,
      status: this.status,
      detail: this.message,
      code: this.code,
      ...(this.remedy === undefined ? {} : { remedy: this.remedy }),
    };
  }

  /** This error with another remedy, for where its own names a step the reader does not have: itself the cause. */
  withRemedy(remedy: string): SvcError {
    return new SvcError(this.code, this.message, {
      remedy,
      extensions: this.extensions,
      status: this.status,
      ...(this.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: this.retryAfterSeconds }),
      cause: this,
    });
  }

  /** Rebuilds the typed error from a problem document the service sent. */
  static fromProblem(body: unknown, httpStatus: number): SvcError {
    const problem = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const { type: _type, title: _title, status: _status, detail, code, remedy, ...extensions } = problem;
    const knownCode: ErrorCode = isErrorCode(code) ? code : httpStatus >= 500 ? 'internal' : 'failed';
    const message = typeof detail === 'string' && detail !== '' ? detail : `the service answered HTTP ${httpStatus}`;
    return new SvcError(knownCode, message, {
      status: httpStatus,
      extensions,
      ...(typeof remedy === 'string' ? { remedy } : {}),
    });
  }
}

// How the service client's requests travel (src/node/service/service-client.ts keeps the retries, deadlines and errors).
// Two carriers, one contract: a one-shot command sends a request or two and exits, so it uses Node's own http
// (./node-transport.ts), which starts at once; the daemon lives for months and keeps undici's connection pool
// (./undici-transport.ts), whose WebAssembly HTTP parser costs a one-shot command ~190 ms at exit
// (docs/operations.md "Benchmarks").
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';

export interface TransportRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** A stream (an artifact) goes as it is read, with the Content-Length the caller put in `headers`. */
  body: string | Buffer | Readable | undefined;
  /** Aborts the request: the call's deadline, or the caller giving up. */
  signal: AbortSignal;
  /** How long to wait for the connection (through a proxy: for the tunnel too). */
  connectTimeoutMs: number;
  /** How long to wait for the status line and headers once connected. */
  headersTimeoutMs: number;
  /** The longest pause within the body (undici's bodyTimeout); `headersTimeoutMs` unless given, 0: none (a stream). */
  bodyTimeoutMs?: number;
}

export interface TransportResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /**
   * The body as it arrives, not yet read: the caller reads it within a cap of its own or streams it to a file
   * (src/lib/bounded-stream.ts), never whole into memory on the sender's say; reading it to its end or destroying
   * it frees the connection. The call's signal still aborts it.
   */
  body: Readable;
}

export interface Transport {
  send(request: TransportRequest): Promise<TransportResponse>;
  /** Lets the requests in flight finish, then frees the connections. */
  close(): Promise<void>;
  /** Ends the requests in flight at once (Ctrl+C). */
  destroy(): Promise<void>;
}

/** The codes of a failure to reach the service (Node's and undici's), which a call retries when that is safe. */
/**
 * Failures before a connection was made: the request provably never reached the service (docs/api.md "Settling a
 * pending run"). A reset or a timeout after connecting may have delivered it.
 */
export const NOT_SENT_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
]);

/**
 * A call's deadline: its signal aborts once `ms` passed, as AbortSignal.timeout does; for an answer that streams
 * (`streamed`), only until answered() says its status line came, so the body may last as long as it is sent.
 */
export function answerDeadline(ms: number, streamed: boolean): { signal: AbortSignal; answered(): void } {
  if (!streamed) return { signal: AbortSignal.timeout(ms), answered: () => undefined };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('the deadline passed', 'TimeoutError')), ms);
  timer.unref();
  return { signal: controller.signal, answered: () => clearTimeout(timer) };
}

/** A failure of the network, with the code the client treats as "unreachable" (a timeout, a refused connection). */
export function networkError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Why a TLS handshake failed, in words, for an error of either carrier; undefined when it is not one. OpenSSL's own
 * text (`…:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:…`) names a library function, not what
 * to do: the one mistake it mostly means here, an https:// URL for a service that answers plain HTTP (svc-api
 * without a proxy in front), is said as such.
 */
export function tlsFailure(error: unknown, url: string): string | undefined {
  const seen = [error, (error as { cause?: unknown } | undefined)?.cause];
  const texts = seen.map((each) => `${(each as { code?: unknown })?.code ?? ''} ${(each as Error)?.message ?? ''}`).join(' ');
  if (/wrong version number|packet length too long|ERR_SSL_WRONG_VERSION_NUMBER/i.test(texts)) {
    return `it does not answer TLS there: is it plain HTTP? then ${url.replace(/^https:/, 'http:')}`;
  }
  const certificate =
    /\b(CERT_[A-Z_]+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_[A-Z_]+|ERR_TLS_CERT_ALTNAME_INVALID)\b/.exec(
      texts,
    )?.[1];
  if (certificate !== undefined) return `its TLS certificate is not trusted here (${certificate})`;
  if (/SSL routines|EPROTO|ERR_SSL_/i.test(texts)) return 'the TLS handshake failed';
  return undefined;
}

/** The pause before retry `attempt` (1, 2, …): 250 ms doubled each time, jittered by ±50% so retries spread. */
export function jitteredBackoff(attempt: number): number {
  const base = 250 * 2 ** (attempt - 1);
  return Math.round(base / 2 + Math.random() * base);
}

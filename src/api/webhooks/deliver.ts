// One delivery attempt (docs/api.md "Webhooks"): an HTTPS POST of the signed event, to an address judged before it is
// connected to (http/outbound-guard.ts), bounded in time, redirects not followed (a redirect to a private address
// would be a way round the check). The answer's status and the first bytes of its body are what the attempt records.
// Anything that ends the attempt before a TLS session is up records the one WEBHOOK_NO_CONNECTION_ERROR, the cause
// kept for the operator's log: the log a user reads must not tell a closed port from a refused address.
import { request } from 'node:https';
import { rootCertificates } from 'node:tls';
import type { Socket } from 'node:net';
import { WEBHOOK_ATTEMPT_TIMEOUT_MS, WEBHOOK_NO_CONNECTION_ERROR, WEBHOOK_RESPONSE_EXCERPT_CHARS } from '../../contract/webhooks.js';
import { addressRefusal, guardedConnection } from '../http/outbound-guard.js';
import type { WebhookDelivery } from './webhook-options.js';

export interface AttemptResult {
  status_code: number | null;
  /** Why the attempt failed before an answer (refused address, TLS, timeout, connection), or a non-2xx answer. */
  error: string | null;
  response_excerpt: string | null;
  duration_ms: number;
  delivered: boolean;
  /** Why there was no connection (the address refused, the resolver's or the socket's code): the operator's log only. */
  unreachable?: string;
}

/** Read of an answer's body, at most: enough for the excerpt, never a receiver's whole page. */
const MAX_READ_BYTES = 4096;

const noConnection = (cause: string): Omit<AttemptResult, 'duration_ms'> => ({
  status_code: null,
  error: WEBHOOK_NO_CONNECTION_ERROR,
  response_excerpt: null,
  delivered: false,
  unreachable: cause,
});

export function postEvent(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: WebhookDelivery,
  signal: AbortSignal,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  let connection: ReturnType<typeof guardedConnection>;
  try {
    connection = guardedConnection(new URL(url), options);
  } catch (error) {
    return Promise.resolve({ ...noConnection((error as Error).message), duration_ms: elapsed() });
  }
  return new Promise((resolve) => {
    let settled = false;
    const done = (result: Omit<AttemptResult, 'duration_ms'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve({ ...result, duration_ms: elapsed() });
    };
    const failed = (error: string): void => done({ status_code: null, error, response_excerpt: null, delivered: false });
    const unreachable = (cause: string): void => done(noConnection(cause));
    // Set once the TLS session is up: the certificate was valid for the name, and what follows is the receiver's.
    let secured = false;
    const req = request(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'svc-webhooks/1',
      },
      ...(options.ca === undefined ? {} : { ca: [...rootCertificates, options.ca] }),
      ...connection,
      // A connection of its own each time: a kept-alive socket would skip the judgement of a new resolution.
      agent: false,
    });
    const timer = setTimeout(() => {
      req.destroy();
      if (secured) failed(`no answer within ${WEBHOOK_ATTEMPT_TIMEOUT_MS / 1000} s`);
      else unreachable(`no TLS session within ${WEBHOOK_ATTEMPT_TIMEOUT_MS / 1000} s`);
    }, WEBHOOK_ATTEMPT_TIMEOUT_MS);
    const onAbort = (): void => {
      req.destroy();
      failed('the service stopped');
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('socket', (socket: Socket) => {
      socket.once('secureConnect', () => (secured = true));
      // The guard judged every address before the connection was made; this only checks that it was so.
      socket.once('connect', () => {
        const refusal = addressRefusal(socket.remoteAddress ?? '', options);
        if (refusal === undefined) return;
        req.destroy();
        unreachable(`connected without the guard: ${refusal}`);
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      const text = error.code === undefined ? error.message : `${error.code}: ${error.message}`;
      if (secured) failed(text);
      else unreachable(text);
    });
    req.on('response', (response) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const finish = (): void => {
        const status = response.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        const excerpt = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '').slice(0, WEBHOOK_RESPONSE_EXCERPT_CHARS);
        const delivered = status >= 200 && status < 300;
        done({
          status_code: status,
          error: delivered ? null : `answered HTTP ${status}`,
          response_excerpt: excerpt === '' ? null : excerpt,
          delivered,
        });
        response.destroy();
      };
      response.on('data', (chunk: Buffer) => {
        if (read >= MAX_READ_BYTES) return;
        chunks.push(chunk.subarray(0, MAX_READ_BYTES - read));
        read += chunk.length;
        if (read >= MAX_READ_BYTES) finish();
      });
      response.on('end', finish);
      response.on('error', finish);
    });
    req.end(body);
  });
}

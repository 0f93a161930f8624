// What one call of the service client (../service-client.ts) sends and gets: its options and its answer.
import type { Readable } from 'node:stream';

export interface ServiceResponse<T> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
}

export interface CallOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /** JSON, or bytes sent as they are (an agent bundle: its Content-Type in `headers`). */
  body?: unknown;
  /**
   * A body streamed from a source opened anew for each attempt (an artifact's file), sent with its length as
   * Content-Length; `headers` name its type.
   */
  upload?: () => Promise<{ stream: Readable; bytes: number }>;
  /** A 2xx body streamed into this file (mode 0600), at most `maxBytes`: resolves with its size and SHA-256. */
  saveTo?: { file: string; maxBytes: number };
  /** The most bytes of an answer read into memory (MAX_ANSWER_BYTES unless given); more fails the call. */
  maxBytes?: number;
  bearer?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
  /** Whether sending the request twice has the effect of sending it once. */
  retrySafe: boolean;
  /** This call's own deadline, retries included (a long poll, a wait for a run), instead of the client's. */
  deadlineMs?: number;
  /** Gives up the call (a daemon that stops abandons its long poll): rejects with `interrupted`, no retry. */
  signal?: AbortSignal;
  /** A 2xx body that streams (a followed log), resolved unread: the deadline ends at its status line, not its end. */
  streamBody?: boolean;
}

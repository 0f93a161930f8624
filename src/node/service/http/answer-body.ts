// How the service client reads an answer's body (docs/operations.md "Bounded downloads"): within a cap decided before
// the first byte, into memory (JSON, at most MAX_ANSWER_BYTES unless the call says less) or streamed into a file
// (a release, a bundle) hashed as it goes. Past its cap the transfer is cut off and the call fails, not retried: the
// same sender would send the same.
import type { Readable } from 'node:stream';
import { SvcError } from '../../../contract/errors.js';
import { readBounded, saveBounded, StreamTooLarge, type SavedStream } from '../../../lib/bounded-stream.js';

/** Far above any JSON the service sends, far below what would exhaust a node. Files are never read so. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** Who answered what, for the error: the service's base URL and the path asked for. */
export interface AnswerOrigin {
  baseUrl: string;
  path: string;
}

export function readAnswer(body: Readable, maxBytes: number, origin: AnswerOrigin): Promise<Buffer> {
  return bounded(origin, maxBytes, () => readBounded(body, maxBytes));
}

export function saveAnswer(body: Readable, saveTo: { file: string; maxBytes: number }, origin: AnswerOrigin): Promise<SavedStream> {
  return bounded(origin, saveTo.maxBytes, () => saveBounded(body, saveTo.file, saveTo.maxBytes));
}

/** An answer past its cap: `max_bytes` says so to a caller that words it for its own reader (a release refused). */
async function bounded<T>(origin: AnswerOrigin, maxBytes: number, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!(error instanceof StreamTooLarge)) throw error;
    throw new SvcError(
      'internal',
      `the service at ${origin.baseUrl} answered ${origin.path} with more than ${maxBytes} bytes; the rest was not read`,
      {
        extensions: { max_bytes: maxBytes },
        remedy:
          'Nothing of it was used. Check that the base URL names the service (swarm-node config get base_url): what answered is not it, or something between rewrites its answers.',
      },
    );
  }
}

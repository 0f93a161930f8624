// What a call sends as its body (src/node/service/service-client.ts): JSON, bytes as they are (an agent bundle), or a
// stream opened anew for each attempt (an artifact's file), with the headers each needs.
import { Readable } from 'node:stream';
import { messageOf, SvcError } from '../../../contract/errors.js';

export type RequestBody = string | Buffer | Readable | undefined;

export interface BodySource {
  /** JSON, or bytes sent as they are (their Content-Type in the call's headers). */
  body?: unknown;
  /** A stream and its length, opened for each attempt. */
  upload?: () => Promise<{ stream: Readable; bytes: number }>;
}

/** The body of one attempt; sets Content-Type (JSON) or Content-Length (a stream) in `headers`. */
export async function requestBody(source: BodySource, headers: Record<string, string>): Promise<RequestBody> {
  if (source.upload !== undefined) {
    let upload;
    try {
      upload = await source.upload();
    } catch (error) {
      // The source's own failure (a file no longer there), not the network's: not retried, said as it is.
      throw new SvcError('failed', messageOf(error));
    }
    headers['content-length'] = String(upload.bytes);
    return upload.stream;
  }
  if (Buffer.isBuffer(source.body) || source.body === undefined) return source.body;
  headers['content-type'] = 'application/json';
  return JSON.stringify(source.body);
}

/** An upload the attempt did not read to its end (refused early, failed) lets go of its source. */
export function releaseBody(body: RequestBody): void {
  if (body instanceof Readable && !body.readableEnded) body.destroy();
}

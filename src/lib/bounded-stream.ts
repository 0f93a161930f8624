// Reading bytes someone else sends (a service's answer, a release, an agent bundle) with a cap decided before the
// first byte (docs/operations.md "Releases", "Bounded downloads"): kept in memory when small, streamed to a file
// when not, and hashed as they pass, so nothing is read twice and a sender that goes on past the cap is cut off
// there: memory and disk hold at most the cap, whatever it sends.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** The stream went past its cap: what was read is dropped (the caller words the error for its reader). */
export class StreamTooLarge extends Error {
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    super(`more than ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}

export interface SavedStream {
  bytes: number;
  /** SHA-256 of the bytes written, hex. */
  sha256: string;
}

/** All of `stream`, at most `maxBytes` of it; past that the stream is destroyed and StreamTooLarge thrown. */
export async function readBounded(stream: Readable, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      bytes += (chunk as Buffer).length;
      if (bytes > maxBytes) throw new StreamTooLarge(maxBytes);
      chunks.push(chunk as Buffer);
    }
  } finally {
    // Ends the transfer (a socket, a file) rather than reading the rest for nothing.
    if (bytes > maxBytes) stream.destroy();
  }
  return Buffer.concat(chunks);
}

/**
 * Streams into `file` (created, or emptied, with `mode`), hashing as it goes. Past `maxBytes` the stream is destroyed
 * and StreamTooLarge thrown, with what was written left for the caller to remove (its directory is its own).
 */
export async function saveBounded(
  stream: Readable | AsyncIterable<Buffer>,
  file: string,
  maxBytes: number,
  mode = 0o600,
): Promise<SavedStream> {
  const hash = createHash('sha256');
  let bytes = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      if (bytes > maxBytes) return done(new StreamTooLarge(maxBytes));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  await pipeline(stream, counted, createWriteStream(file, { mode }));
  return { bytes, sha256: hash.digest('hex') };
}

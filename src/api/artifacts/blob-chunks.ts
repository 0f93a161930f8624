// A blob's bytes in and out of the database, one chunk at a time (docs/api.md "Run artifacts"): written from the
// upload's temporary file, read back as a stream, so neither holds more than a chunk of it in memory. Each chunk is
// a statement of its own: a 64 MiB artifact never holds SQLite's one writer for the whole of it.
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { CHUNK_BYTES, type ArtifactStore } from './artifact-store.js';

/** Writes the `sizeBytes` bytes of `file` as the chunks of `blobId`. */
export async function writeBlobChunks(artifacts: ArtifactStore, blobId: string, file: string, sizeBytes: number): Promise<void> {
  const handle = await open(file, 'r');
  try {
    for (let seq = 0, position = 0; position < sizeBytes; seq += 1) {
      const content = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, sizeBytes - position));
      const { bytesRead } = await handle.read(content, 0, content.length, position);
      if (bytesRead !== content.length)
        throw new Error(`the upload's temporary file ended at ${position + bytesRead} of ${sizeBytes} bytes`);
      await artifacts.writeChunk(blobId, seq, content);
      position += bytesRead;
    }
  } finally {
    await handle.close();
  }
}

/** The blob's bytes as they are stored; the stream fails when they are not `sizeBytes` of them. */
export function blobStream(artifacts: ArtifactStore, blobId: string, sizeBytes: number): Readable {
  async function* chunks(): AsyncGenerator<Buffer> {
    let read = 0;
    for (let seq = 0; read < sizeBytes; seq += 1) {
      const content = await artifacts.chunk(blobId, seq);
      if (content === undefined) break;
      read += content.length;
      yield content;
    }
    // Content-Length was sent already: a short or long body must end as a broken response, never as a whole one.
    if (read !== sizeBytes) throw new Error(`artifact blob ${blobId} holds ${read} bytes, not ${sizeBytes}`);
  }
  return Readable.from(chunks(), { objectMode: false });
}

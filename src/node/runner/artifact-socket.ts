// A systemd run's artifacts come out through its connection (docs/operations.md "Agent isolation"): the unit's tmpfs
// is its own, out of the daemon's sight, so agent-exec reads the files there (./artifact-source.ts, after the agent
// ended) and the daemon asks for them after the outcome line, one request line at a time:
//   {"op":"list"}                          → one line: {"files":[{name,size}…],"skipped":[{name,reason}…]}
//   {"op":"open","name":N,"max_bytes":M}   → {"bytes":S} then exactly S bytes, or {"error":"…"}
// The daemon closing the connection ends it (and the unit). agent-exec runs as the agent's user, so the daemon takes
// what it answers as the agent's own words: names checked again, every length bounded, nothing parsed but the lines.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { Readable, type Writable } from 'node:stream';
import { isArtifactName } from '../../contract/artifacts.js';
import {
  MAX_ENTRIES_LOOKED_AT,
  type ArtifactFile,
  type ArtifactListing,
  type ArtifactSource,
  type SkippedEntry,
} from './artifact-source.js';

/** A listing of MAX_ENTRIES_LOOKED_AT names of 128 characters and the skipped ones fits well inside. */
const MAX_LISTING_BYTES = 512 * 1024;
const MAX_REQUEST_LINE_BYTES = 4096;

/** Lines and byte frames from one stream, in order; a frame not read to its end is dropped before the next read. */
export class FramedReader {
  readonly #chunks: AsyncIterator<Buffer>;
  #pending: Buffer = Buffer.alloc(0);
  #ended = false;
  /** Bytes of the current frame not yet read. */
  #owed = 0;

  constructor(stream: Readable) {
    this.#chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  /** The next line (without its newline); undefined at the end of the stream. Longer than `maxBytes`: an error. */
  async line(maxBytes: number): Promise<string | undefined> {
    await this.#dropOwed();
    for (;;) {
      const newline = this.#pending.indexOf(0x0a);
      if (newline >= 0) {
        const line = this.#pending.subarray(0, newline).toString('utf8');
        this.#pending = this.#pending.subarray(newline + 1);
        return line;
      }
      if (this.#pending.length > maxBytes) throw new Error(`a line longer than ${maxBytes} bytes`);
      if (!(await this.#more())) return undefined;
    }
  }

  /** The next `count` bytes as they arrive; the stream ending before them is an error. */
  async *bytes(count: number): AsyncGenerator<Buffer> {
    this.#owed = count;
    while (this.#owed > 0) {
      const chunk = await this.#take();
      yield chunk;
    }
  }

  async #take(): Promise<Buffer> {
    if (this.#pending.length === 0 && !(await this.#more()))
      throw new Error(`the connection ended ${this.#owed} bytes before the end of a file`);
    const chunk = this.#pending.subarray(0, this.#owed);
    this.#pending = this.#pending.subarray(chunk.length);
    this.#owed -= chunk.length;
    return chunk;
  }

  async #dropOwed(): Promise<void> {
    while (this.#owed > 0) await this.#take();
  }

  async #more(): Promise<boolean> {
    if (this.#ended) return false;
    const next = await this.#chunks.next();
    if (next.done === true) {
      this.#ended = true;
      return false;
    }
    this.#pending = this.#pending.length === 0 ? next.value : Buffer.concat([this.#pending, next.value]);
    return true;
  }
}

/** The daemon's side: the run's artifacts, asked of agent-exec over the connection once the outcome came. */
export function socketArtifacts(socket: Socket, reader: FramedReader): ArtifactSource {
  /** The stream of the last file: it must be done with the connection before the next request goes. */
  let previous: Readable | undefined;
  const ask = async (request: object, maxAnswerBytes: number): Promise<Record<string, unknown>> => {
    if (previous !== undefined && !previous.closed) {
      previous.destroy();
      await once(previous, 'close');
    }
    socket.write(`${JSON.stringify(request)}\n`);
    const line = await reader.line(maxAnswerBytes);
    if (line === undefined) throw new Error('the agent service closed its connection');
    const answer = JSON.parse(line) as unknown;
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
      throw new Error('the agent service answered something that is not an object');
    return answer as Record<string, unknown>;
  };
  return {
    async list() {
      return checkedListing(await ask({ op: 'list' }, MAX_LISTING_BYTES));
    },
    async open(name, maxBytes) {
      const answer = await ask({ op: 'open', name, max_bytes: maxBytes }, MAX_REQUEST_LINE_BYTES);
      if (typeof answer.error === 'string') throw new Error(answer.error.slice(0, 300));
      const bytes = answer.bytes;
      if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0 || bytes > maxBytes) {
        // The bytes that follow cannot be told apart from the next answer: nothing more is asked on this connection.
        socket.destroy();
        throw new Error(`the agent service announced ${String(bytes)} bytes for ${name}, not 0 to ${maxBytes}`);
      }
      previous = Readable.from(reader.bytes(bytes), { objectMode: false });
      return { stream: previous, bytes };
    },
  };
}

/** agent-exec's side: answers the daemon's requests from `source` until it closes the connection. */
export async function serveArtifactRequests(
  reader: FramedReader,
  output: Writable,
  source: ArtifactSource,
  first: Promise<string | undefined>,
): Promise<void> {
  for (let line = await first; line !== undefined; line = await reader.line(MAX_REQUEST_LINE_BYTES)) {
    const request = JSON.parse(line) as { op?: unknown; name?: unknown; max_bytes?: unknown };
    if (request.op === 'list') {
      await send(output, `${JSON.stringify(await source.list())}\n`);
      continue;
    }
    if (request.op !== 'open' || typeof request.name !== 'string' || typeof request.max_bytes !== 'number')
      throw new Error('not an artifact request');
    let opened;
    try {
      opened = await source.open(request.name, request.max_bytes);
    } catch (error) {
      await send(output, `${JSON.stringify({ error: (error as Error).message })}\n`);
      continue;
    }
    await send(output, `${JSON.stringify({ bytes: opened.bytes })}\n`);
    // A file that fails mid-way (it shrank) cannot be framed any more: the error ends the connection.
    for await (const chunk of opened.stream) await send(output, chunk as Buffer);
  }
}

async function send(output: Writable, data: string | Buffer): Promise<void> {
  if (!output.write(data)) await once(output, 'drain');
}

function checkedListing(answer: Record<string, unknown>): ArtifactListing {
  const files = Array.isArray(answer.files) ? answer.files.slice(0, MAX_ENTRIES_LOOKED_AT) : [];
  const skipped = Array.isArray(answer.skipped) ? answer.skipped.slice(0, 50) : [];
  return {
    files: files.filter((file): file is ArtifactFile => isFile(file)).map((file) => ({ name: file.name, size: file.size })),
    skipped: skipped
      .filter((entry): entry is SkippedEntry => typeof entry?.name === 'string' && typeof entry?.reason === 'string')
      .map((entry) => ({ name: entry.name.slice(0, 200), reason: entry.reason.slice(0, 300) })),
  };
}

function isFile(file: unknown): file is ArtifactFile {
  const candidate = file as Partial<ArtifactFile> | null;
  return (
    typeof candidate?.name === 'string' &&
    isArtifactName(candidate.name) &&
    typeof candidate.size === 'number' &&
    Number.isSafeInteger(candidate.size) &&
    candidate.size >= 0
  );
}

// What a run left in its artifacts directory (docs/api.md "Run artifacts"), read as the node must read what a hostile
// agent made: entries are looked at without following anything (lstat, a bounded readdir), each file is opened with
// O_NOFOLLOW and O_NONBLOCK (a symbolic link swapped in fails, a FIFO does not block), checked on the open descriptor
// to be a regular file with one link, and read for exactly the size it had then, never more. A name must be a plain
// file name (ARTIFACT_NAME_PATTERN), so no path leaves the directory. The same reader serves the daemon (bubblewrap,
// none: the directory is on the host) and agent-exec (systemd: inside the run's unit, ./artifact-socket.ts).
import { constants } from 'node:fs';
import { lstat, open, opendir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline, Readable, Transform } from 'node:stream';
import { isArtifactName } from '../../contract/artifacts.js';

export interface ArtifactFile {
  name: string;
  size: number;
}

/** An entry not taken, and why, for the run's log: a directory, a link, a FIFO, a name, a size. */
export interface SkippedEntry {
  name: string;
  reason: string;
}

export interface ArtifactListing {
  /** The regular files that may be uploaded, by name. */
  files: ArtifactFile[];
  skipped: SkippedEntry[];
}

export interface OpenedArtifact {
  /** Exactly `bytes` bytes, or an error: the file changed while it was read. */
  stream: Readable;
  bytes: number;
}

export interface ArtifactSource {
  list(): Promise<ArtifactListing>;
  /** The file as it is now, at most `maxBytes` of it: refused when it is no regular file any more or grew past that. */
  open(name: string, maxBytes: number): Promise<OpenedArtifact>;
}

/** A run's artifacts kept after its agent ended: read them, then release them (their directory or connection goes). */
export interface HeldArtifacts {
  source: ArtifactSource;
  release(): void | Promise<void>;
}

/** Entries looked at: an agent that made a million is told about the first ones, and costs no more than those. */
export const MAX_ENTRIES_LOOKED_AT = 1000;
/** Skipped entries reported: enough to see what happened. */
const MAX_SKIPPED_REPORTED = 20;
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

export function directoryArtifacts(dir: string, maxFileBytes: number): ArtifactSource {
  return {
    async list() {
      const files: ArtifactFile[] = [];
      const skipped: SkippedEntry[] = [];
      let seen = 0;
      let unreported = 0;
      const skip = (name: string, reason: string): void => {
        if (skipped.length < MAX_SKIPPED_REPORTED) skipped.push({ name: name.slice(0, 200), reason });
        else unreported += 1;
      };
      const entries = await opendir(dir, { bufferSize: 64 });
      try {
        for await (const entry of entries) {
          seen += 1;
          if (seen > MAX_ENTRIES_LOOKED_AT) {
            skip('…', `more than ${MAX_ENTRIES_LOOKED_AT} entries: the rest were not looked at`);
            break;
          }
          const kind = entryKind(entry);
          if (!isArtifactName(entry.name))
            skip(
              entry.name,
              'its name is not a plain file name (letters, digits, ".", "_", "-", starting with a letter or digit, 128 at most)',
            );
          else if (kind !== 'file') skip(entry.name, `it is ${kind}, not a regular file`);
          else {
            const stat = await lstat(join(dir, entry.name)).catch(() => undefined);
            if (stat === undefined || !stat.isFile()) skip(entry.name, 'it changed while it was looked at');
            else if (stat.nlink > 1) skip(entry.name, 'it is a hard link');
            else if (stat.size > maxFileBytes) skip(entry.name, `it is larger than ${maxFileBytes} bytes`);
            else files.push({ name: entry.name, size: stat.size });
          }
        }
      } finally {
        await entries.close().catch(() => undefined);
      }
      if (unreported > 0) skipped.push({ name: '…', reason: `${unreported} more entries skipped` });
      files.sort((a, b) => (a.name < b.name ? -1 : 1));
      return { files, skipped };
    },

    async open(name, maxBytes) {
      if (!isArtifactName(name)) throw new Error(`${JSON.stringify(name)} is not a plain file name`);
      const handle = await open(join(dir, name), OPEN_FLAGS);
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) throw new Error(`${name} is no regular file any more`);
        if (stat.nlink > 1) throw new Error(`${name} is a hard link`);
        if (stat.size > maxBytes) throw new Error(`${name} grew to ${stat.size} bytes, past ${maxBytes}`);
        const bytes = stat.size;
        if (bytes === 0) {
          await handle.close();
          return { stream: Readable.from([]), bytes };
        }
        // Read for exactly its size at the open: what it grows by after is not read, a shrink fails the stream.
        const file = handle.createReadStream({ start: 0, end: bytes - 1, autoClose: true });
        // A failure on either side ends both: a consumer that gives up closes the file.
        return { stream: pipeline(file, exactly(bytes, name), () => undefined), bytes };
      } catch (error) {
        await handle.close().catch(() => undefined);
        throw error;
      }
    },
  };
}

function entryKind(entry: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}): string {
  if (entry.isFile()) return 'file';
  if (entry.isSymbolicLink()) return 'a symbolic link';
  if (entry.isDirectory()) return 'a directory';
  if (entry.isFIFO()) return 'a FIFO';
  if (entry.isSocket()) return 'a socket';
  return 'a device';
}

/** Passes `bytes` bytes on; a stream that ends short fails instead of ending, so a short file is never sent whole. */
function exactly(bytes: number, name: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(null, chunk);
    },
    flush(done) {
      done(seen === bytes ? null : new Error(`${name} changed while it was read: ${seen} bytes, not ${bytes}`));
    },
  });
}

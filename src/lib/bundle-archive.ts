// Reading an agent bundle's archive (docs/api.md "Agent upload"): the service on upload, the node before it installs
// one, the CLI before it sends one. Everything is read into memory within the caps (5 MiB archive, 20 MiB unpacked,
// 1000 entries) and checked before a single byte is written anywhere: only regular files and directories, relative
// paths without `..`, each path once. So a bundle that would escape its directory, plant a link, or a device is
// refused whole, and nothing of it is installed.
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import {
  MANIFEST_FILE,
  MAX_BUNDLE_BYTES,
  MAX_BUNDLE_ENTRIES,
  MAX_MANIFEST_BYTES,
  MAX_PATH_BYTES,
  MAX_UNPACKED_BYTES,
  manifestProblems,
  type AgentManifest,
  type BundleProblem,
} from '../contract/agent-bundle.js';
import { SvcError } from '../contract/errors.js';
import { MAX_JSON_DEPTH, jsonDepth } from '../contract/json-depth.js';

export interface BundleFile {
  data: Buffer;
  /** Any execute bit in the archive: installed 0755, else 0644 (the archive's other bits are not kept). */
  executable: boolean;
}

export interface ReadBundle {
  /** SHA-256 of the archive's bytes, hex. */
  digest: string;
  manifest: AgentManifest;
  /** By normalized path (`bin/run.sh`), in archive order. */
  files: Map<string, BundleFile>;
  /** Directories named in the archive or implied by a file's path. */
  dirs: Set<string>;
  unpackedBytes: number;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Reads and checks a bundle archive; throws `payload_too_large` or `bundle_invalid` (with `errors`). */
export async function readBundleArchive(archive: Buffer): Promise<ReadBundle> {
  if (archive.length > MAX_BUNDLE_BYTES)
    throw tooLarge(`the bundle is ${archive.length} bytes; at most ${MAX_BUNDLE_BYTES} (5 MiB) may be uploaded`);
  const tarBytes = unpackGzip(archive);
  const files = new Map<string, BundleFile>();
  const dirs = new Set<string>();
  let entries = 0;
  let unpackedBytes = 0;
  const extract = tar.extract();
  const reading = (async () => {
    for await (const entry of extract) {
      entries += 1;
      if (entries > MAX_BUNDLE_ENTRIES)
        throw invalid([{ path: entry.header.name, message: `the bundle has more than ${MAX_BUNDLE_ENTRIES} entries` }]);
      const name = normalizeEntryName(entry.header.name);
      const type = entry.header.type;
      if (type !== 'file' && type !== 'directory' && type !== 'contiguous-file') {
        throw invalid([
          {
            path: entry.header.name,
            message: `is a ${type ?? 'special entry'}: a bundle holds only regular files and directories (no links or devices)`,
          },
        ]);
      }
      if (name !== '' && (files.has(name) || dirs.has(name))) throw invalid([{ path: name, message: 'appears twice in the archive' }]);
      if (type === 'directory') {
        if (name !== '') dirs.add(name);
        entry.resume();
        continue;
      }
      if (name === '') throw invalid([{ path: entry.header.name, message: 'a file needs a name' }]);
      const chunks: Buffer[] = [];
      for await (const chunk of entry) {
        unpackedBytes += (chunk as Buffer).length;
        if (unpackedBytes > MAX_UNPACKED_BYTES)
          throw tooLarge(`the bundle's files add up to more than ${MAX_UNPACKED_BYTES} bytes (20 MiB) unpacked`);
        chunks.push(chunk as Buffer);
      }
      files.set(name, { data: Buffer.concat(chunks), executable: ((entry.header.mode ?? 0) & 0o111) !== 0 });
    }
  })();
  extract.end(tarBytes);
  try {
    await reading;
  } catch (error) {
    if (error instanceof SvcError) throw error;
    throw invalid([{ path: '', message: `not a tar archive (${(error as Error).message})` }]);
  }
  for (const name of files.keys()) {
    const parts = name.split('/');
    for (let i = 1; i < parts.length; i += 1) {
      const parent = parts.slice(0, i).join('/');
      if (files.has(parent)) throw invalid([{ path: name, message: `its directory ${parent} is a file of the bundle` }]);
      dirs.add(parent);
    }
  }
  return { digest: sha256Hex(archive), manifest: await readManifest(files), files, dirs, unpackedBytes };
}

async function readManifest(files: Map<string, BundleFile>): Promise<AgentManifest> {
  const file = files.get(MANIFEST_FILE);
  if (file === undefined)
    throw invalid([
      { path: MANIFEST_FILE, message: 'is missing: the bundle needs agent.json at its top (agent_id, version, entry, input_schema)' },
    ]);
  if (file.data.length > MAX_MANIFEST_BYTES) throw invalid([{ path: MANIFEST_FILE, message: `is over ${MAX_MANIFEST_BYTES} bytes` }]);
  let parsed: unknown;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file.data);
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid([{ path: MANIFEST_FILE, message: `is not JSON (${(error as Error).message})` }]);
  }
  // As for every request body (docs/api.md "Conventions"): nothing recursive walks JSON nested without bound.
  if (jsonDepth(text) > MAX_JSON_DEPTH) throw invalid([{ path: MANIFEST_FILE, message: `nests deeper than ${MAX_JSON_DEPTH} levels` }]);
  // Ajv, for the input_schema, is loaded here, when a bundle is read, never by the commands that read none.
  const { schemaProblems } = await import('../contract/input-schema.js');
  const problems = manifestProblems(parsed, new Set(files.keys()), schemaProblems);
  if (problems.length > 0) throw invalid(problems);
  return parsed as AgentManifest;
}

/** gzip (by its magic bytes) or plain tar; the unpacked tar is bounded by the files' cap plus its headers. */
function unpackGzip(archive: Buffer): Buffer {
  if (archive[0] !== 0x1f || archive[1] !== 0x8b) return archive;
  const maxTarBytes = MAX_UNPACKED_BYTES + (MAX_BUNDLE_ENTRIES + 4) * 1024 + 10_240;
  try {
    return gunzipSync(archive, { maxOutputLength: maxTarBytes });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('the bundle unpacks to more than 20 MiB');
    throw invalid([{ path: '', message: `not a gzip stream (${(error as Error).message})` }]);
  }
}

/**
 * The entry's path inside the bundle, `./` and a trailing `/` dropped ('' for the top directory itself); refused
 * when it is absolute, climbs out with `..`, or is not in its one spelling (`a//b`, `a/./b`), which would let two
 * entries name one file.
 */
export function normalizeEntryName(raw: string): string {
  let name = raw;
  while (name.startsWith('./')) name = name.slice(2);
  if (name === '.') name = '';
  if (name.endsWith('/')) name = name.slice(0, -1);
  const refuse = (message: string): never => {
    throw invalid([{ path: raw, message }]);
  };
  if (raw.startsWith('/')) refuse('is an absolute path; paths in a bundle are relative to its top');
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) refuse(`is longer than ${MAX_PATH_BYTES} bytes`);
  if (/[\u0000-\u001f\u007f\\]/.test(name)) refuse('holds a control character or a backslash');
  if (name === '') return name;
  for (const part of name.split('/')) {
    if (part === '..') refuse('climbs out of the bundle with ..');
    if (part === '' || part === '.') refuse('is not a plain relative path (an empty or "." segment)');
  }
  return name;
}

function invalid(errors: BundleProblem[]): SvcError {
  const first = errors[0]!;
  return new SvcError('bundle_invalid', `the bundle is invalid: ${first.path === '' ? '' : `${first.path}: `}${first.message}`, {
    extensions: { errors },
  });
}

function tooLarge(message: string): SvcError {
  return new SvcError('payload_too_large', message, {
    remedy:
      'Keep the bundle to its code: at most 5 MiB packed, 20 MiB unpacked and 1000 files; leave data on the host and pass its path as input.',
  });
}

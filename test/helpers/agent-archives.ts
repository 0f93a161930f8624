// Agent bundles for the upload tests: a working directory as `swarm-node agent init` makes one, and archives
// crafted entry by entry (a symlink, a `..`, a device), which no honest packer writes but an attacker would.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { tarOf } from '../../src/lib/tar-pack.js';
import { scaffoldAgent } from '../../src/node/agents/scaffold.js';
import { tempDir } from './temp.js';

export interface ArchiveEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  data?: string | Buffer;
  mode?: number;
  linkname?: string;
}

/** A tar (gzip unless told) of exactly these entries, in this order. */
export async function archiveOf(entries: readonly ArchiveEntry[], options: { gzip?: boolean } = {}): Promise<Buffer> {
  const bytes = await tarOf(
    entries.map((entry) => {
      const type = entry.type ?? 'file';
      return {
        name: entry.name,
        type,
        mode: entry.mode ?? (type === 'directory' ? 0o755 : 0o644),
        ...(type === 'file' ? { data: Buffer.from(entry.data ?? '') } : {}),
        ...(entry.linkname === undefined ? {} : { linkname: entry.linkname }),
      };
    }),
  );
  return options.gzip === false ? bytes : gzipSync(bytes);
}

export function manifestOf(agentId: string, version: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ agent_id: agentId, version, entry: ['sh', 'main.sh'], input_schema: { type: 'object' }, ...extra });
}

/** A valid archive: agent.json and a main.sh answering `output`. */
export async function validArchive(
  agentId: string,
  version: string,
  output: unknown = { ok: true },
  extra: ArchiveEntry[] = [],
): Promise<Buffer> {
  return archiveOf([
    { name: 'agent.json', data: manifestOf(agentId, version) },
    { name: 'main.sh', data: `#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '${JSON.stringify(output)}'\n`, mode: 0o755 },
    ...extra,
  ]);
}

/** `swarm-node agent init`'s bundle in a fresh directory, its version set to `version`. */
export function scaffoldDir(agentId: string, version = '0.1.0'): string {
  const dir = join(tempDir('bundle-'), 'my-agent');
  scaffoldAgent(dir, agentId);
  const manifestFile = join(dir, 'agent.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(manifestFile, JSON.stringify({ ...manifest, version }, null, 2));
  return dir;
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

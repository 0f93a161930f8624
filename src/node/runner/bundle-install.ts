// An uploaded bundle on this node (docs/api.md "Agent upload", "Distribution"): fetched by its digest with the node
// credential, streamed to a file of its own with the upload cap and hashed as it arrives (docs/operations.md
// "Bounded downloads"), its SHA-256 checked against that digest before anything is unpacked, checked again as any
// upload is (paths, links, sizes, manifest), then written to a temporary directory beside its place and renamed into
// var/agents/<agent_id>/<digest>/ in one step. So a bundle is there whole or not at all, a mismatch or an oversized
// answer installs nothing, and a directory named by a digest always holds exactly those bytes' files. Modes are 0755
// for directories and 0644/0755 for files: the agent's own user (another uid, or systemd's agent user) reads them.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDigest, MAX_BUNDLE_BYTES } from '../../contract/agent-bundle.js';
import type { SavedStream } from '../../lib/bounded-stream.js';
import { readBundleArchive } from '../../lib/bundle-archive.js';
import { readBundleManifest, type Bundle } from './bundles.js';

/** Streams the archive of `digest` into `file` (at most MAX_BUNDLE_BYTES): its size and SHA-256. */
export type BundleFetch = (digest: string, file: string) => Promise<SavedStream>;

export const AGENTS_DIR_NAME = 'agents';

/** The installed bundle of `digest`, fetched and installed first when it is not here yet. */
export async function installBundle(varDir: string, agentId: string, digest: string, fetch: BundleFetch | undefined): Promise<Bundle> {
  if (!isDigest(digest)) throw new Error(`the service named a bundle digest that is not SHA-256 hex: ${JSON.stringify(digest)}`);
  const agentDir = join(varDir, AGENTS_DIR_NAME, agentId);
  const dir = join(agentDir, digest);
  if (existsSync(join(dir, 'agent.json'))) return { dir, manifest: readBundleManifest(dir) };
  if (fetch === undefined) throw new Error(`bundle ${digest} of ${agentId} is not installed and this runner cannot fetch bundles`);
  // var/agents and var/agents/<agent_id>: passed, not listed (0711). A bundle's own directory is found only by its
  // digest, so a user of the host (another tenant's agent, outside a sandbox) cannot list whose code is installed.
  for (const parent of [join(varDir, AGENTS_DIR_NAME), agentDir]) ensureDir(parent, 0o711);
  // A directory of this process's own (0700) for the download: removed whole whatever happens.
  const download = mkdtempSync(join(agentDir, '.download-'));
  let read;
  try {
    const file = join(download, 'bundle.tar.gz');
    let saved: SavedStream;
    try {
      saved = await fetch(digest, file);
    } catch (error) {
      throw new Error(`cannot fetch bundle ${digest} of ${agentId}: ${(error as Error).message}`);
    }
    if (saved.bytes > MAX_BUNDLE_BYTES)
      throw new Error(
        `bundle ${digest} of ${agentId} was refused: ${saved.bytes} bytes, more than ${MAX_BUNDLE_BYTES}; nothing was installed`,
      );
    if (saved.sha256 !== digest) {
      throw new Error(
        `bundle ${digest} of ${agentId} was refused: the downloaded bytes have SHA-256 ${saved.sha256}; nothing was installed`,
      );
    }
    try {
      // Within the cap, so in memory now: the archive is checked whole before a byte of it is written.
      read = await readBundleArchive(readFileSync(file));
    } catch (error) {
      throw new Error(`bundle ${digest} of ${agentId} was refused: ${(error as Error).message}; nothing was installed`);
    }
  } finally {
    rmSync(download, { recursive: true, force: true });
  }
  if (read.manifest.agent_id !== agentId)
    throw new Error(`bundle ${digest} is for ${read.manifest.agent_id}, not ${agentId}; nothing was installed`);

  const staging = mkdtempSync(join(agentDir, '.incoming-'));
  try {
    chmodSync(staging, 0o755);
    for (const name of [...read.dirs].sort()) ensureDir(join(staging, name));
    for (const [name, file] of read.files) {
      const path = join(staging, name);
      writeFileSync(path, file.data, { mode: 0o600 });
      chmodSync(path, file.executable ? 0o755 : 0o644);
    }
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // Another run of this node installed the same bytes meanwhile: its directory is as good as ours.
    if (!existsSync(join(dir, 'agent.json'))) throw error;
  }
  return { dir, manifest: readBundleManifest(dir) };
}

function ensureDir(dir: string, mode = 0o755): void {
  mkdirSync(dir, { recursive: true, mode });
  chmodSync(dir, mode);
}

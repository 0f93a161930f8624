// Checks a release before any of it is used (issue 15 §3, §4), in the order install.sh does: the manifest's
// signature against the trusted keys, then the tarball against the manifest's SHA-256 and size, and only then the
// unpacking, which takes the release's own top directory, regular files and directories only, and every file's
// digest as the manifest lists it. A failure says what failed; the target directory is then removed whole.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { SvcError } from '../../contract/errors.js';
import { isReleasePath, parseManifest, releaseStem, sha256Hex, type ReleaseManifest } from '../../lib/release-manifest.js';
import { keyId, verifyManifest, type TrustedKey } from '../../lib/release-signature.js';
import type { DownloadedRelease } from './release-client.js';

export interface VerifiedRelease {
  manifest: ReleaseManifest;
  /** Which trusted key signed it: where it came from, and its id. */
  signedBy: { source: string; key_id: string };
}

function unverified(message: string): SvcError {
  return new SvcError('release_unverified', `${message}; nothing was installed`);
}

export function verifyRelease(release: DownloadedRelease, keys: readonly TrustedKey[]): VerifiedRelease {
  const signer = verifyManifest(release.manifest, release.signature, keys);
  if (signer === undefined) {
    throw unverified(
      `the release's signature does not verify with any trusted key (${keys.map((key) => `${keyId(key.key)} ${key.source}`).join(', ')}): it was not signed by one of them, or the manifest was altered`,
    );
  }
  let manifest: ReleaseManifest;
  try {
    manifest = parseManifest(release.manifest.toString('utf8'));
  } catch (error) {
    throw unverified(`the signed manifest does not read: ${(error as Error).message}`);
  }
  if (release.artifact.length < manifest.artifact.size) {
    throw unverified(`the download is truncated: ${release.artifact.length} of ${manifest.artifact.size} bytes`);
  }
  const digest = sha256Hex(release.artifact);
  if (digest !== manifest.artifact.sha256 || release.artifact.length !== manifest.artifact.size) {
    throw unverified(`the artifact's SHA-256 is ${digest}, the signed manifest says ${manifest.artifact.sha256}: it was altered or damaged`);
  }
  return { manifest, signedBy: { source: signer.source, key_id: keyId(signer.key) } };
}

/** Unpacks a verified release's tarball into `target` (created; removed again on any failure). */
export async function unpackRelease(artifact: Buffer, manifest: ReleaseManifest, target: string): Promise<void> {
  const stem = `${releaseStem(manifest.version, manifest.platform)}/`;
  const expected = new Map(manifest.files.map((file) => [file.path, file]));
  const written = new Set<string>();
  mkdirSync(target, { recursive: true, mode: 0o755 });
  try {
    // Streamed through gunzip: the unpacked release (~90 MB with its runtime) is never in memory whole.
    const extract = tar.extract();
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => void chunks.push(chunk as Buffer));
      stream.on('end', () => {
        try {
          const name = header.name.replace(/\/+$/, '');
          if (header.type === 'directory' && (name === stem.slice(0, -1) || name.startsWith(stem))) return next();
          if (header.type !== 'file' || !name.startsWith(stem)) throw unverified(`the artifact holds ${header.type ?? 'an entry'} ${JSON.stringify(header.name)} outside what a release may hold`);
          const path = name.slice(stem.length);
          const listed = expected.get(path);
          if (listed === undefined || !isReleasePath(path) || written.has(path)) throw unverified(`the artifact holds ${path}, which its manifest does not list`);
          const data = Buffer.concat(chunks);
          if (createHash('sha256').update(data).digest('hex') !== listed.sha256) throw unverified(`${path} differs from the signed manifest`);
          const destination = join(target, ...path.split('/'));
          mkdirSync(dirname(destination), { recursive: true, mode: 0o755 });
          writeFileSync(destination, data, { mode: 0o600 });
          chmodSync(destination, listed.executable ? 0o755 : 0o644);
          written.add(path);
          next();
        } catch (error) {
          // Ends the pipeline with this error: the caller sees why, and nothing more is read.
          extract.destroy(error as Error);
        }
      });
    });
    await pipeline(Readable.from([artifact]), createGunzip(), extract);
    const missing = manifest.files.filter((file) => !written.has(file.path));
    if (missing.length > 0) throw unverified(`the artifact lacks ${missing.length} file(s) its manifest lists, ${missing[0]!.path} first`);
  } catch (error) {
    rmSync(target, { recursive: true, force: true });
    throw error;
  }
}

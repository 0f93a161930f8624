// Checks a release before any of it is used (docs/operations.md "Releases"), in the order install.sh does: the
// manifest's signature against the trusted keys, then the tarball against the manifest's SHA-256 and size (hashed
// as it was copied, obtain-release.ts), and only then the unpacking, which takes the release's own top directory,
// regular files and directories only, each file streamed to disk and checked against the size and digest the
// manifest lists. A failure says what failed; the target directory is then removed whole.
import { chmodSync, mkdirSync, rmSync, createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { SvcError } from '../../contract/errors.js';
import { saveBounded, StreamTooLarge, type SavedStream } from '../../lib/bounded-stream.js';
import { isReleasePath, MAX_ARTIFACT_BYTES, parseManifest, releaseStem, type ReleaseManifest } from '../../lib/release-manifest.js';
import { keyId, verifyManifest, type TrustedKey } from '../../lib/release-signature.js';

export interface VerifiedRelease {
  manifest: ReleaseManifest;
  /** Which trusted key signed it: where it came from, and its id. */
  signedBy: { source: string; key_id: string };
}

export function unverified(message: string): SvcError {
  return new SvcError('release_unverified', `${message}; nothing was installed`);
}

/** The manifest, once a trusted key's signature over its bytes verifies. */
export function verifySignedManifest(manifestBytes: Buffer, signature: Buffer, keys: readonly TrustedKey[]): VerifiedRelease {
  const signer = verifyManifest(manifestBytes, signature, keys);
  if (signer === undefined) {
    throw unverified(
      `the release's signature does not verify with any trusted key (${keys.map((key) => `${keyId(key.key)} ${key.source}`).join(', ')}): it was not signed by one of them, or the manifest was altered`,
    );
  }
  let manifest: ReleaseManifest;
  try {
    manifest = parseManifest(manifestBytes.toString('utf8'));
  } catch (error) {
    throw unverified(`the signed manifest does not read: ${(error as Error).message}`);
  }
  if (manifest.artifact.size > MAX_ARTIFACT_BYTES)
    throw unverified(
      `the signed manifest lists a tarball of ${manifest.artifact.size} bytes, more than the ${MAX_ARTIFACT_BYTES} a release may have`,
    );
  return { manifest, signedBy: { source: signer.source, key_id: keyId(signer.key) } };
}

/** The tarball as copied (its size and the SHA-256 hashed on the way) against the signed manifest. */
export function checkArtifact(manifest: ReleaseManifest, artifact: SavedStream): void {
  if (artifact.bytes < manifest.artifact.size)
    throw unverified(`the download is truncated: ${artifact.bytes} of ${manifest.artifact.size} bytes`);
  if (artifact.sha256 !== manifest.artifact.sha256 || artifact.bytes !== manifest.artifact.size) {
    throw unverified(
      `the artifact's SHA-256 is ${artifact.sha256}, the signed manifest says ${manifest.artifact.sha256}: it was altered or damaged`,
    );
  }
}

/** Unpacks a verified release's tarball (a private copy) into `target` (created; removed again on any failure). */
export async function unpackRelease(artifactFile: string, manifest: ReleaseManifest, target: string): Promise<void> {
  const stem = `${releaseStem(manifest.version, manifest.platform)}/`;
  const expected = new Map(manifest.files.map((file) => [file.path, file]));
  const written = new Set<string>();
  mkdirSync(target, { recursive: true, mode: 0o755 });
  const extract = tar.extract();
  // Streamed through gunzip and each file to disk: the unpacked release (~90 MB with its runtime) is never in memory.
  const feeding = pipeline(createReadStream(artifactFile), createGunzip(), extract);
  // Handled here and awaited below: a damaged gzip ends the loop with its error, never as an unhandled rejection.
  feeding.catch(() => undefined);
  try {
    for await (const entry of extract) {
      const { header } = entry;
      const name = header.name.replace(/\/+$/, '');
      if (header.type === 'directory' && (name === stem.slice(0, -1) || name.startsWith(stem))) {
        entry.resume();
        continue;
      }
      if (header.type !== 'file' || !name.startsWith(stem))
        throw unverified(`the artifact holds ${header.type ?? 'an entry'} ${JSON.stringify(header.name)} outside what a release may hold`);
      const path = name.slice(stem.length);
      const listed = expected.get(path);
      if (listed === undefined || !isReleasePath(path) || written.has(path))
        throw unverified(`the artifact holds ${path}, which its manifest does not list`);
      const destination = join(target, ...path.split('/'));
      mkdirSync(dirname(destination), { recursive: true, mode: 0o755 });
      let saved: SavedStream;
      try {
        saved = await saveBounded(entry as AsyncIterable<Buffer>, destination, listed.size);
      } catch (error) {
        if (error instanceof StreamTooLarge) throw unverified(`${path} is larger than the signed manifest says`);
        throw error;
      }
      if (saved.sha256 !== listed.sha256 || saved.bytes !== listed.size) throw unverified(`${path} differs from the signed manifest`);
      chmodSync(destination, listed.executable ? 0o755 : 0o644);
      written.add(path);
    }
    await feeding;
    const missing = manifest.files.filter((file) => !written.has(file.path));
    if (missing.length > 0) throw unverified(`the artifact lacks ${missing.length} file(s) its manifest lists, ${missing[0]!.path} first`);
  } catch (error) {
    extract.destroy();
    await feeding.catch(() => undefined);
    rmSync(target, { recursive: true, force: true });
    throw error;
  }
}

// A release asked for by version, obtained and verified (docs/operations.md "Releases", "Bounded downloads"): the
// manifest (at most MAX_MANIFEST_BYTES) and its signature (64 bytes) first, the signature checked, the manifest's
// version and platform checked against what was asked for; only then the tarball, capped at the size the signed
// manifest gives and hashed as it is copied. Every file is copied once into `dir`, a private directory of the
// caller's, and used from there: a service (or whatever sits on an http:// URL) that sends another release than
// the one named, or more bytes than were signed, is refused before anything is unpacked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { StreamTooLarge, type SavedStream } from '../../lib/bounded-stream.js';
import { MAX_MANIFEST_BYTES, releaseFileNames } from '../../lib/release-manifest.js';
import { SIGNATURE_BYTES, type TrustedKey } from '../../lib/release-signature.js';
import type { ReleaseSource } from './release-source.js';
import { checkArtifact, unverified, verifySignedManifest, type VerifiedRelease } from './verify-release.js';

export interface ObtainedRelease extends VerifiedRelease {
  /** The verified tarball, in the caller's directory. */
  artifactFile: string;
  /** The directory holding the three files as `npm run release` names them. */
  dir: string;
}

export async function obtainRelease(
  source: ReleaseSource,
  wanted: { version: string; platform: string },
  dir: string,
  keys: readonly TrustedKey[],
): Promise<ObtainedRelease> {
  const names = releaseFileNames(wanted.version, wanted.platform);
  const copy = async (name: string, maxBytes: number, what: string): Promise<SavedStream> => {
    try {
      return await source.copy(name, join(dir, name), maxBytes);
    } catch (error) {
      const tooLarge = error instanceof StreamTooLarge || (error instanceof SvcError && typeof error.extensions.max_bytes === 'number');
      if (tooLarge) throw unverified(`${name} is larger than ${what} (${maxBytes} bytes); the rest was not read`);
      throw error;
    }
  };
  await copy(names.manifest, MAX_MANIFEST_BYTES, 'a manifest may be');
  await copy(names.signature, SIGNATURE_BYTES, 'a signature is');
  const verified = verifySignedManifest(readFileSync(join(dir, names.manifest)), readFileSync(join(dir, names.signature)), keys);
  const { manifest } = verified;
  if (manifest.version !== wanted.version || manifest.platform !== wanted.platform) {
    throw unverified(
      `swarm-node ${wanted.version} for ${wanted.platform} was asked for, and the signed manifest is of ${manifest.version} for ${manifest.platform}: whoever served it sent another release than the one named`,
    );
  }
  const artifact = await copy(names.artifact, manifest.artifact.size, 'its signed size');
  checkArtifact(manifest, artifact);
  return { ...verified, artifactFile: join(dir, names.artifact), dir };
}

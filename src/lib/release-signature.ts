// Ed25519 over a release's manifest (release-manifest.ts), with node:crypto. The signature file is the raw 64 bytes,
// the form `openssl pkeyutl -verify -rawin -sigfile` reads, so a host without Node checks it with OpenSSL 3.
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { sha256Hex } from './release-manifest.js';

/** An Ed25519 signature: the signature file is exactly this long. */
export const SIGNATURE_BYTES = 64;

export interface TrustedKey {
  /** Where the key came from: "pinned production-2026", a --trust-key file, etc/release-keys/<file>. */
  source: string;
  key: KeyObject;
}

/** A key's id: the first 16 hex digits of the SHA-256 of its raw 32 bytes (stable across PEM re-encodings). */
export function keyId(key: KeyObject): string {
  const raw = key.export({ format: 'der', type: 'spki' }).subarray(-32);
  return sha256Hex(raw).slice(0, 16);
}

/** Reads an Ed25519 public key (SPKI PEM); throws an Error saying what is wrong with it. */
export function publicKeyFromPem(pem: string, source: string): TrustedKey {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new Error(`${source} is not a PEM public key (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${source} is a ${String(key.asymmetricKeyType)} key, not Ed25519`);
  return { source, key };
}

export function privateKeyFromPem(pem: string, source: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new Error(`${source} is not a PEM private key (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${source} is a ${String(key.asymmetricKeyType)} key, not Ed25519`);
  return key;
}

export function signManifest(manifest: Buffer, privateKey: KeyObject): Buffer {
  return sign(null, manifest, privateKey);
}

/** The trusted key that signed `manifest`, or undefined when none did. */
export function verifyManifest(manifest: Buffer, signature: Buffer, keys: readonly TrustedKey[]): TrustedKey | undefined {
  if (signature.length !== SIGNATURE_BYTES) return undefined;
  return keys.find((trusted) => verify(null, manifest, trusted.key, signature));
}

// What the service keeps encrypted at rest (docs/api.md "Secrets", docs/operations.md "Secrets at rest"): a user's
// secrets and the signing secrets of webhook endpoints. AES-256-GCM from node:crypto, a fresh 96-bit nonce per
// value, the owner and the name bound as additional data (a value copied onto another user's row does not open),
// and the id of the key it was sealed with stored beside it, so the key can be rotated: the current key seals,
// every key of the ring opens, and a sweep seals again under the current key what an older one sealed.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { keyId } from '../secrets.js';

export interface VaultKey {
  /** The first 16 hex digits of the key's SHA-256 (secrets.ts keyId): names it without revealing it. */
  id: string;
  key: Buffer;
}

export interface Sealed {
  key_id: string;
  nonce: string;
  ciphertext: string;
}

export interface Vault {
  /** The id of the key that seals now. */
  readonly currentKeyId: string;
  /** The ids of the older keys it still opens with (SVC_SECRETS_PREVIOUS_KEYS). */
  readonly previousKeyIds: readonly string[];
  seal(plaintext: string, context: string): Sealed;
  /** The plaintext; throws VaultKeyMissing when no key of the ring has the sealed value's id. */
  open(sealed: Sealed, context: string): string;
}

export class VaultKeyMissing extends Error {
  constructor(readonly keyId: string) {
    super(`no key of SVC_SECRETS_KEY or SVC_SECRETS_PREVIOUS_KEYS has the id ${keyId}: a value sealed with it cannot be read`);
  }
}

export const VAULT_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export function vaultKeyOf(key: Buffer): VaultKey {
  return { id: keyId(key), key };
}

export function createVault(current: VaultKey, previous: readonly VaultKey[] = []): Vault {
  const ring = new Map<string, Buffer>([...previous, current].map((entry) => [entry.id, entry.key]));
  return {
    currentKeyId: current.id,
    previousKeyIds: previous.map((entry) => entry.id).filter((id) => id !== current.id),
    seal(plaintext, context) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, nonce);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return { key_id: current.id, nonce: nonce.toString('base64'), ciphertext: body.toString('base64') };
    },
    open(sealed, context) {
      const key = ring.get(sealed.key_id);
      if (key === undefined) throw new VaultKeyMissing(sealed.key_id);
      const body = Buffer.from(sealed.ciphertext, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.nonce, 'base64'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    },
  };
}

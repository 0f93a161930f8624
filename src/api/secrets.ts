// docs/decisions/0005-tokens.md: keys come from the environment, or are generated into the data directory (0600) on
// first start. They are never logged and never leave this module except as key material.
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, openSync, readFileSync, writeSync, closeSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../contract/errors.js';

export interface ServiceSecrets {
  /** HS256 key for access tokens. */
  jwtKey: Uint8Array;
  /** Names the key in the JWT header, so a key can be rotated without breaking tokens signed by the old one. */
  jwtKid: string;
  /** HMAC key of the payment provider's webhook signature: the secret string's UTF-8 bytes. */
  webhookSecret: string;
}

const MIN_JWT_KEY_BYTES = 32;

export function loadSecrets(dataDir: string, env: NodeJS.ProcessEnv = process.env): ServiceSecrets {
  const jwtText = env.SVC_JWT_SECRET ?? readOrCreateSecretFile(join(dataDir, 'jwt-secret'), () => randomBytes(32).toString('base64url'));
  const jwtKey = Buffer.from(jwtText.trim(), 'base64url');
  if (jwtKey.length < MIN_JWT_KEY_BYTES) {
    throw new SvcError('invalid_request', `SVC_JWT_SECRET must be base64url of at least ${MIN_JWT_KEY_BYTES} bytes`, {
      remedy: "Generate one with: node -e \"console.log(require('crypto').randomBytes(32).toString('base64url'))\"",
    });
  }
  const webhookSecret =
    env.SVC_WEBHOOK_SECRET ??
    readOrCreateSecretFile(join(dataDir, 'webhook-secret'), () => `whsec_${randomBytes(24).toString('base64url')}`);
  if (webhookSecret.trim() === '') throw new SvcError('invalid_request', 'SVC_WEBHOOK_SECRET must not be empty');
  return { jwtKey: new Uint8Array(jwtKey), jwtKid: keyId(jwtKey), webhookSecret: webhookSecret.trim() };
}

/** A public, stable name for a key: the first 8 bytes of its SHA-256, so the kid reveals nothing of the key. */
export function keyId(key: Uint8Array): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** The secret in `path`, or a new one `generate` makes, written there 0600 (the vault's key too: vault/vault-keys.ts). */
export function readOrCreateSecretFile(path: string, generate: () => string): string {
  try {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) chmodSync(path, 0o600);
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const value = generate();
  // Created 0600 before the secret is written, and exclusively, so two starts can't interleave.
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, `${value}\n`);
  } finally {
    closeSync(fd);
  }
  return value;
}

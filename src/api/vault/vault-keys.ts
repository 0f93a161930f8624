// The vault's keys (docs/operations.md "Secrets at rest"), as the JWT's key is found (secrets.ts): SVC_SECRETS_KEY,
// base64url of 32 bytes, or a key generated 0600 into the data directory at first start; SVC_SECRETS_PREVIOUS_KEYS,
// keys a rotation replaced, comma-separated, read until the re-seal sweep has moved every value off them.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { readOrCreateSecretFile } from '../secrets.js';
import { createVault, VAULT_KEY_BYTES, vaultKeyOf, type Vault } from './vault.js';

export const SECRETS_KEY_FILE = 'secrets-key';

/** Why `text` is not a vault key; undefined when it is one. */
export function vaultKeyProblem(text: string): string | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(trimmed) || Buffer.from(trimmed, 'base64url').length !== VAULT_KEY_BYTES) {
    return `must be base64url of exactly ${VAULT_KEY_BYTES} bytes (node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")`;
  }
  return undefined;
}

export function loadVault(dataDir: string, env: NodeJS.ProcessEnv): Vault {
  const currentText =
    env.SVC_SECRETS_KEY ??
    readOrCreateSecretFile(join(dataDir, SECRETS_KEY_FILE), () => randomBytes(VAULT_KEY_BYTES).toString('base64url'));
  const keyOf = (text: string, name: string) => {
    const problem = vaultKeyProblem(text);
    if (problem !== undefined) throw new Error(`${name} ${problem}`);
    return vaultKeyOf(Buffer.from(text.trim(), 'base64url'));
  };
  const previous = (env.SVC_SECRETS_PREVIOUS_KEYS ?? '')
    .split(',')
    .filter((text) => text.trim() !== '')
    .map((text) => keyOf(text, 'SVC_SECRETS_PREVIOUS_KEYS'));
  return createVault(keyOf(currentText, 'SVC_SECRETS_KEY'), previous);
}

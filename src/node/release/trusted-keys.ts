// The keys a release's signature is checked against (docs/operations.md "Releases"): the ones pinned in this
// program, the ones the operator put in etc/release-keys/ (install.sh --trust-key copies its key there), and one
// named for this command (--trust-key FILE, or SVC_RELEASE_TRUST_KEY). A key that cannot be read is an error,
// not a key skipped: trusting less than the operator asked for would be a surprise of its own.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { PINNED_RELEASE_KEYS } from '../../contract/release-keys.js';
import { publicKeyFromPem, type TrustedKey } from '../../lib/release-signature.js';

export function releaseKeysDir(etcDir: string): string {
  return join(etcDir, 'release-keys');
}

export function trustedReleaseKeys(etcDir: string, extraKeyFile: string | undefined): TrustedKey[] {
  const keys = PINNED_RELEASE_KEYS.map((pinned) => publicKeyFromPem(pinned.pem, `pinned key ${pinned.name}`));
  const dir = releaseKeysDir(etcDir);
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith('.pem'))
        .sort()
        .map((name) => join(dir, name))
    : [];
  if (extraKeyFile !== undefined && extraKeyFile !== '') files.push(extraKeyFile);
  for (const file of files) {
    try {
      keys.push(publicKeyFromPem(readFileSync(file, 'utf8'), file));
    } catch (error) {
      throw new SvcError('usage', `cannot use the release key ${file}: ${(error as Error).message}`, {
        remedy: 'Give an Ed25519 public key in PEM (openssl pkey -in private.pem -pubout), or remove the file.',
      });
    }
  }
  return keys;
}

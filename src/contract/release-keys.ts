// The release signing keys every node trusts (docs/operations.md "Releases"): Ed25519 public keys, SPKI PEM. The
// private halves are kept off the repository, by whoever signs releases. scripts/install.sh pins the same keys (a
// test compares the two); a rotation adds the next key here first, ships a release signed by the old one, and
// drops the old one a release later. Keys an operator adds (--trust-key, etc/release-keys/) are trusted besides.

export interface PinnedReleaseKey {
  /** Who holds the private half, for the reader; messages name a key by its id (release-signature.ts keyId). */
  name: string;
  pem: string;
}

export const PINNED_RELEASE_KEYS: readonly PinnedReleaseKey[] = [
  {
    name: 'production-2026',
    pem: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEASL5/OAYAc/0u8Wlnn3nU9CYAgS6t/aPPCdxiA61Zk88=\n-----END PUBLIC KEY-----\n',
  },
];

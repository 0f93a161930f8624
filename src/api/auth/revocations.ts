// Revoked access tokens (docs/api.md "Revocation and sessions"). A JWT is checked on every request and most requests
// are a node's or a user's hot path, so the check is a lookup in memory, kept current from the database: every
// instance tails the `token_revocations` log every REVOCATION_POLL_MS, so a token revoked on one instance is refused
// by every instance within a second, and the request path never waits for the database to ask.
import { randomUUID } from 'node:crypto';
import { JWT_LIFETIME_SECONDS } from '../../contract/claims.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';

/** How often each instance reads revocations made elsewhere: within the one second the docs promise. */
export const REVOCATION_POLL_MS = 400;
/**
 * How far back each read looks, past the newest revocation already seen: instances' clocks and commits are not in
 * order, so a revocation committed late with an earlier time is still read. Revocations are rare: the overlap
 * costs a few rows a read.
 */
const OVERLAP_MS = 60_000;

export interface Revocations {
  /** Whether a token of `userId` issued at `issuedAtMs` (the jti given) is revoked: memory only. */
  isRevoked(userId: string, jti: string | undefined, issuedAtMs: number): boolean;
  /** Revokes one token, here at once and on every instance within a second. */
  revokeToken(userId: string, jti: string): Promise<void>;
  /** Revokes every token of the user issued before now (sign out everywhere). */
  revokeUser(userId: string): Promise<number>;
  /** Reads what other instances revoked since the last read; scheduled by the service. */
  refresh(): Promise<void>;
}

export function createRevocations(store: Store, clock: Clock): Revocations {
  const revokedJtis = new Map<string, number>();
  const notBefore = new Map<string, number>();
  // Everything revoked in a token's lifetime is read at the first refresh.
  let readFrom = clock.now() - JWT_LIFETIME_SECONDS * 1000;

  const apply = (row: { user_id: string; jti: string | null; not_before: number | null; revoked_at: number }): void => {
    if (row.jti !== null) revokedJtis.set(row.jti, row.revoked_at);
    if (row.not_before !== null && row.not_before > (notBefore.get(row.user_id) ?? 0)) notBefore.set(row.user_id, row.not_before);
  };
  const record = async (row: { user_id: string; jti: string | null; not_before: number | null }): Promise<void> => {
    const entry = { revocation_id: randomUUID(), ...row, revoked_at: clock.now() };
    await store.db.insertInto('token_revocations').values(entry).execute();
    apply(entry);
  };

  return {
    isRevoked(userId, jti, issuedAtMs) {
      if (jti !== undefined && revokedJtis.has(jti)) return true;
      const cutoff = notBefore.get(userId);
      return cutoff !== undefined && issuedAtMs < cutoff;
    },
    async revokeToken(userId, jti) {
      await store.transaction(async () => {
        await store.db.updateTable('issued_tokens').set({ revoked_at: clock.now() }).where('jti', '=', jti).where('revoked_at', 'is', null).execute();
        await record({ user_id: userId, jti, not_before: null });
      });
    },
    async revokeUser(userId) {
      const now = clock.now();
      return store.transaction(async () => {
        const revoked = await store.db
          .updateTable('issued_tokens')
          .set({ revoked_at: now })
          .where('sub', '=', userId)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', now)
          .executeTakeFirst();
        // A token issued in this same millisecond is "before now" too: the cutoff is the next millisecond.
        await record({ user_id: userId, jti: null, not_before: now + 1 });
        return Number(revoked.numUpdatedRows);
      });
    },
    async refresh() {
      const rows = await store.db
        .selectFrom('token_revocations')
        .select(['user_id', 'jti', 'not_before', 'revoked_at'])
        .where('revoked_at', '>=', readFrom - OVERLAP_MS)
        .execute();
      for (const row of rows) {
        apply(row);
        if (row.revoked_at > readFrom) readFrom = row.revoked_at;
      }
      // A revoked token outlives its revocation by at most its lifetime: after that it is refused as expired anyway.
      const forgetBefore = clock.now() - JWT_LIFETIME_SECONDS * 1000;
      for (const [jti, at] of revokedJtis) if (at < forgetBefore) revokedJtis.delete(jti);
    },
  };
}

// Revoked access tokens (docs/api.md "Revocation and sessions"). A JWT is checked on every request and most requests
// are a node's or a user's hot path, so the check is a lookup in memory, kept current from the database: every
// instance tails the `token_revocations` log every REVOCATION_POLL_MS, so a token revoked on one instance is refused
// by every instance within a second, and the request path never waits for the database to ask. The same log says
// when a node credential stops working (its node removed, or the credential rotated away: jti `node:<node_id>`), so
// every instance drops what it remembered of that node within the same second (nodes/credentials.ts).
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

/** The jti of a node's revocation in the log: its remembered credentials are forgotten (nodes/credentials.ts). */
const NODE_JTI_PREFIX = 'node:';

export interface Revocations {
  /** Whether a token of `userId` issued at `issuedAtMs` (the jti given) is revoked: memory only. */
  isRevoked(userId: string, jti: string | undefined, issuedAtMs: number): boolean;
  /** Revokes one token, here at once and on every instance within a second. */
  revokeToken(userId: string, jti: string): Promise<void>;
  /** Revokes every token of the user issued before now (sign out everywhere). */
  revokeUser(userId: string): Promise<number>;
  /** Reads what other instances revoked since the last read; scheduled by the service. */
  refresh(): Promise<void>;
  /** A credential of the node stops working (removed, or rotated): here at once, on every instance within a second. */
  revokeNode(userId: string, nodeId: string): Promise<void>;
  /** Where the log of node revocations learnt stands now: take it before reading a node's row. */
  nodeMark(): number;
  /** Whether a revocation of the node was learnt after `mark`: what was read of it since is stale. */
  nodeRevokedSince(nodeId: string, mark: number): boolean;
}

export function createRevocations(store: Store, clock: Clock): Revocations {
  const revokedJtis = new Map<string, number>();
  const notBefore = new Map<string, number>();
  /** How many node revocations were learnt, and where that count stood at each node's last one. */
  let nodesRevoked = 0;
  const nodeRevokedAt = new Map<string, number>();
  /** The node revocations learnt, by id, with their time: each counts once, however often a read sees it again. */
  const nodeRevocations = new Map<string, number>();
  // Everything revoked in a token's lifetime is read at the first refresh.
  let readFrom = clock.now() - JWT_LIFETIME_SECONDS * 1000;

  const apply = (row: {
    revocation_id: string;
    user_id: string;
    jti: string | null;
    not_before: number | null;
    revoked_at: number;
  }): void => {
    if (row.jti?.startsWith(NODE_JTI_PREFIX) === true) {
      if (nodeRevocations.has(row.revocation_id)) return;
      nodeRevocations.set(row.revocation_id, row.revoked_at);
      nodesRevoked += 1;
      nodeRevokedAt.set(row.jti.slice(NODE_JTI_PREFIX.length), nodesRevoked);
      return;
    }
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
        await store.db
          .updateTable('issued_tokens')
          .set({ revoked_at: clock.now() })
          .where('jti', '=', jti)
          .where('revoked_at', 'is', null)
          .execute();
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
        .select(['revocation_id', 'user_id', 'jti', 'not_before', 'revoked_at'])
        .where('revoked_at', '>=', readFrom - OVERLAP_MS)
        .execute();
      for (const row of rows) {
        apply(row);
        if (row.revoked_at > readFrom) readFrom = row.revoked_at;
      }
      // A revoked token outlives its revocation by at most its lifetime: after that it is refused as expired anyway.
      const forgetBefore = clock.now() - JWT_LIFETIME_SECONDS * 1000;
      for (const [jti, at] of revokedJtis) if (at < forgetBefore) revokedJtis.delete(jti);
      // A node revocation is read again only within the overlap: past it, its id need not be remembered.
      for (const [id, at] of nodeRevocations) if (at < readFrom - 2 * OVERLAP_MS) nodeRevocations.delete(id);
    },
    async revokeNode(userId, nodeId) {
      await record({ user_id: userId, jti: `${NODE_JTI_PREFIX}${nodeId}`, not_before: null });
    },
    nodeMark: () => nodesRevoked,
    nodeRevokedSince: (nodeId, mark) => (nodeRevokedAt.get(nodeId) ?? 0) > mark,
  };
}

// DECISIONS.md "Tokens": a deploy token is 32 random bytes in base64url, single use, valid 15 minutes, and the
// service keeps only its SHA-256, so a copy of the database installs no node. It comes from a session's activation,
// or from a signed-in user for one more node (docs/api.md "Runs on the node"); either way it names the user and
// the tier of the node it enrolls.
import { createHash, randomBytes } from 'node:crypto';
import { DEPLOY_TOKEN_LIFETIME_SECONDS } from '../../contract/claims.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export interface IssuedDeployToken {
  token: string;
  expires_at: number;
}

export interface DeployTokens {
  /** A fresh token for the session; the session's earlier unused tokens die with it. Call inside a transaction. */
  replaceForSession(sessionId: string): IssuedDeployToken;
  /** A fresh token for another node of the user; the user's earlier unused ones of this kind die with it. */
  replaceForUser(owner: DeployTokenOwner): IssuedDeployToken;
  /** Marks the token used and returns whose it is, or undefined when it is unknown, expired, revoked or used. */
  consume(token: string): ConsumedDeployToken | undefined;
  /** Whether the token would enroll now, without using it: a release download before the install enrolls. */
  usable(token: string): boolean;
}

/** Whose node a token enrolls, for which tier, and the payment that proved it. */
export interface DeployTokenOwner {
  user_id: string;
  tier_id: string;
  payment_id: string;
}

export interface ConsumedDeployToken extends DeployTokenOwner {
  /** null: a signed-in user's token, with no session behind it. */
  session_id: string | null;
}

export function hashDeployToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createDeployTokens(db: SqliteDatabase, clock: Clock): DeployTokens {
  const revokeUnused = db.prepare(
    'UPDATE deploy_tokens SET revoked_at = ? WHERE session_id = ? AND used_at IS NULL AND revoked_at IS NULL',
  );
  const revokeUnusedOfUser = db.prepare(
    'UPDATE deploy_tokens SET revoked_at = ? WHERE user_id = ? AND session_id IS NULL AND used_at IS NULL AND revoked_at IS NULL',
  );
  const sessionOwner = db.prepare<[string], { user_id: string; tier_id: string; payment_id: string | null }>(
    'SELECT user_id, tier_id, payment_id FROM sessions WHERE session_id = ?',
  );
  const insert = db.prepare(
    'INSERT INTO deploy_tokens (token_hash, session_id, user_id, tier_id, payment_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  // One statement decides and marks, so two enrolls racing with one token can't both see it unused.
  const markUsed = db.prepare<[number, string, number], ConsumedDeployToken>(`
    UPDATE deploy_tokens SET used_at = ?
    WHERE token_hash = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?
    RETURNING session_id, user_id, tier_id, payment_id`);

  const findUsable = db.prepare<[string, number], { token_hash: string }>(
    'SELECT token_hash FROM deploy_tokens WHERE token_hash = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?',
  );

  function issue(sessionId: string | null, owner: DeployTokenOwner, now: number): IssuedDeployToken {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = now + DEPLOY_TOKEN_LIFETIME_SECONDS * 1000;
    insert.run(hashDeployToken(token), sessionId, owner.user_id, owner.tier_id, owner.payment_id, now, expiresAt);
    return { token, expires_at: expiresAt };
  }

  return {
    replaceForSession(sessionId) {
      const now = clock.now();
      const owner = sessionOwner.get(sessionId);
      if (owner?.payment_id == null) throw new Error(`no activated session ${sessionId} to issue a deploy token for`);
      revokeUnused.run(now, sessionId);
      return issue(sessionId, { ...owner, payment_id: owner.payment_id }, now);
    },
    replaceForUser(owner) {
      const now = clock.now();
      return db.transaction(() => {
        revokeUnusedOfUser.run(now, owner.user_id);
        return issue(null, owner, now);
      }).immediate();
    },
    consume(token) {
      const now = clock.now();
      return markUsed.get(now, hashDeployToken(token), now);
    },
    usable(token) {
      return findUsable.get(hashDeployToken(token), clock.now()) !== undefined;
    },
  };
}

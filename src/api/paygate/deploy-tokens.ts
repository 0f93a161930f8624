// DECISIONS.md "Tokens": a deploy token is 32 random bytes in base64url, single use, valid 15 minutes, and the
// service keeps only its SHA-256, so a copy of the database installs no node.
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
  /** Marks the token used and returns its session, or undefined when it is unknown, expired, revoked or used. */
  consume(token: string): { session_id: string } | undefined;
}

export function hashDeployToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createDeployTokens(db: SqliteDatabase, clock: Clock): DeployTokens {
  const revokeUnused = db.prepare(
    'UPDATE deploy_tokens SET revoked_at = ? WHERE session_id = ? AND used_at IS NULL AND revoked_at IS NULL',
  );
  const insert = db.prepare('INSERT INTO deploy_tokens (token_hash, session_id, created_at, expires_at) VALUES (?, ?, ?, ?)');
  // One statement decides and marks, so two enrolls racing with one token can't both see it unused.
  const markUsed = db.prepare<[number, string, number], { session_id: string }>(`
    UPDATE deploy_tokens SET used_at = ?
    WHERE token_hash = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?
    RETURNING session_id`);

  return {
    replaceForSession(sessionId) {
      const now = clock.now();
      const token = randomBytes(32).toString('base64url');
      const expiresAt = now + DEPLOY_TOKEN_LIFETIME_SECONDS * 1000;
      revokeUnused.run(now, sessionId);
      insert.run(hashDeployToken(token), sessionId, now, expiresAt);
      return { token, expires_at: expiresAt };
    },
    consume(token) {
      const now = clock.now();
      return markUsed.get(now, hashDeployToken(token), now);
    },
  };
}

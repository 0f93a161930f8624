// The wallet page's sessions (DECISIONS.md "Wallet page"): the JWT from the sign-in link is exchanged for a random
// session id that lives only in an HttpOnly cookie. The database keeps the id's SHA-256, never the id or the JWT.
import { createHash, randomBytes } from 'node:crypto';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

/** A wallet session never outlives its JWT, and ends after this long even when the JWT lives on. */
export const WALLET_SESSION_MAX_SECONDS = 12 * 60 * 60;

/** 32 random bytes in base64url: what the cookie carries. Anything else is not one of ours. */
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface WalletSession {
  user_id: string;
  tier: string;
  expires_at: number;
}

export interface NewWalletSession extends WalletSession {
  /** The cookie value; shown once, never stored. */
  session_id: string;
}

export interface WalletSessions {
  create(claims: AccessTokenClaims): NewWalletSession;
  /** The live session of a cookie value, or undefined (unknown, malformed or expired). */
  find(sessionId: string | undefined): WalletSession | undefined;
  revoke(sessionId: string | undefined): void;
}

export function createWalletSessions(db: SqliteDatabase, clock: Clock): WalletSessions {
  const insert = db.prepare(
    'INSERT INTO wallet_sessions (session_hash, user_id, tier, token_jti, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const select = db.prepare<[string, number], WalletSession>(
    'SELECT user_id, tier, expires_at FROM wallet_sessions WHERE session_hash = ? AND expires_at > ?',
  );
  const remove = db.prepare('DELETE FROM wallet_sessions WHERE session_hash = ?');
  const purgeExpired = db.prepare('DELETE FROM wallet_sessions WHERE expires_at <= ?');

  return {
    create(claims) {
      const now = clock.now();
      // Expired sessions are swept when new ones are made: the table stays as small as the live sessions.
      purgeExpired.run(now);
      const session_id = randomBytes(32).toString('base64url');
      const expires_at = Math.min(claims.exp * 1000, now + WALLET_SESSION_MAX_SECONDS * 1000);
      const user_id = normalizeEmail(claims.sub);
      insert.run(hashSessionId(session_id), user_id, claims.tier, claims.jti ?? null, now, expires_at);
      return { session_id, user_id, tier: claims.tier, expires_at };
    },

    find(sessionId) {
      if (sessionId === undefined || !SESSION_ID_PATTERN.test(sessionId)) return undefined;
      return select.get(hashSessionId(sessionId), clock.now());
    },

    revoke(sessionId) {
      if (sessionId === undefined || !SESSION_ID_PATTERN.test(sessionId)) return;
      remove.run(hashSessionId(sessionId));
    },
  };
}

function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

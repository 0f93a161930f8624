// The wallet page's sessions (docs/decisions/0009-wallet-page.md): the JWT from the sign-in link is exchanged for a
// random session id that lives only in an HttpOnly cookie. The database keeps the id's SHA-256, never the id or the
// JWT.
import { createHash, randomBytes } from 'node:crypto';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Revocations } from '../auth/revocations.js';

/** A wallet session never outlives its JWT, and ends after this long even when the JWT lives on. */
export const WALLET_SESSION_MAX_SECONDS = 12 * 60 * 60;

/** 32 random bytes in base64url: what the cookie carries. Anything else is not one of ours. */
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export interface WalletSession {
  user_id: string;
  tier: string;
  expires_at: number;
  /** When its user last proved the inbox (ms): the JWT's auth_time, or a code confirmed in the console; null: never. */
  auth_time: number | null;
}

/** What a session is made from: a verified JWT's claims (signing in by link), or those a pending sign-in kept. */
export type SessionClaims = Pick<AccessTokenClaims, 'sub' | 'tier' | 'exp' | 'jti' | 'auth_time'>;

export interface NewWalletSession extends WalletSession {
  /** The cookie value; shown once, never stored. */
  session_id: string;
}

export interface WalletSessions {
  create(claims: SessionClaims): Promise<NewWalletSession>;
  /** The live session of a cookie value, or undefined (unknown, malformed or expired). */
  find(sessionId: string | undefined): Promise<WalletSession | undefined>;
  revoke(sessionId: string | undefined): Promise<void>;
  /** Its user proved the inbox again just now (the console's code confirmation, docs/api.md "Console"). */
  confirmInbox(sessionId: string, at: number): Promise<void>;
}

/** A session ends with the JWT it was made from: revoked, or its user signed out everywhere after it began. */
export function createWalletSessions(store: Store, clock: Clock, revocations: Revocations): WalletSessions {
  return {
    async create(claims) {
      const now = clock.now();
      // Expired sessions are swept when new ones are made: the table stays as small as the live sessions.
      await store.db.deleteFrom('wallet_sessions').where('expires_at', '<=', now).execute();
      const session_id = randomBytes(32).toString('base64url');
      const expires_at = Math.min(claims.exp * 1000, now + WALLET_SESSION_MAX_SECONDS * 1000);
      const user_id = normalizeEmail(claims.sub);
      const auth_time = claims.auth_time === undefined ? null : claims.auth_time * 1000;
      await store.db
        .insertInto('wallet_sessions')
        .values({
          session_hash: hashSessionId(session_id),
          user_id,
          tier: claims.tier,
          token_jti: claims.jti ?? null,
          created_at: now,
          expires_at,
          auth_time,
        })
        .execute();
      return { session_id, user_id, tier: claims.tier, expires_at, auth_time };
    },

    async find(sessionId) {
      if (sessionId === undefined || !SESSION_ID_PATTERN.test(sessionId)) return undefined;
      const row = await store.db
        .selectFrom('wallet_sessions')
        .select(['user_id', 'tier', 'expires_at', 'token_jti', 'created_at', 'auth_time'])
        .where('session_hash', '=', hashSessionId(sessionId))
        .where('expires_at', '>', clock.now())
        .executeTakeFirst();
      if (row === undefined || revocations.isRevoked(row.user_id, row.token_jti ?? undefined, row.created_at)) return undefined;
      return { user_id: row.user_id, tier: row.tier, expires_at: row.expires_at, auth_time: row.auth_time };
    },

    async revoke(sessionId) {
      if (sessionId === undefined || !SESSION_ID_PATTERN.test(sessionId)) return;
      await store.db.deleteFrom('wallet_sessions').where('session_hash', '=', hashSessionId(sessionId)).execute();
    },

    async confirmInbox(sessionId, at) {
      await store.db.updateTable('wallet_sessions').set({ auth_time: at }).where('session_hash', '=', hashSessionId(sessionId)).execute();
    },
  };
}

function hashSessionId(sessionId: string): string {
  return createHash('sha256').update(sessionId).digest('hex');
}

// A sign-in link that waits for its button (docs/api.md "Wallet page"): a link that did not come from the address bar
// leaves its verified claims in a pre-session cookie, sealed with a key of the service's, and the "Continue as" form
// carries a token derived from that cookie. Another site can neither read the cookie nor make the token, so a form it
// sends, even into this browser, signs no one in. Sealed rather than stored: any instance may take the button.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { normalizeEmail } from '../../contract/schemas.js';
import type { AccessTokenClaims } from '../../contract/claims.js';
import type { Clock } from '../../lib/clock.js';
import type { SessionClaims } from './wallet-sessions.js';

export const PENDING_COOKIE = 'svc_wallet_pending';
/** Long enough to read the page and press its button; a link left open longer is opened again. */
export const PENDING_SIGN_IN_SECONDS = 10 * 60;

export interface PendingSignIn {
  claims: SessionClaims;
  /** The address it signs in as, as the session will hold it. */
  user_id: string;
  /** When the link was opened and its token verified (ms): a revocation since then ends the sign-in. */
  opened_at: number;
  expires_at: number;
  /** Random, per opened link: what the form's token is made from. */
  nonce: string;
}

export interface PendingSignIns {
  /** The cookie value that holds a link's verified claims. */
  seal(claims: AccessTokenClaims): { value: string; maxAgeSeconds: number };
  /** What a cookie value holds, expired or not, when this service sealed it; undefined for anything else. */
  open(value: string | undefined): PendingSignIn | undefined;
  /** The hidden field of the "Continue as" form. */
  formToken(pending: PendingSignIn): string;
  formTokenMatches(pending: PendingSignIn | undefined, given: string): boolean;
}

interface Sealed {
  n: string;
  sub: string;
  tier: string;
  exp: number;
  jti?: string;
  auth_time?: number;
  at: number;
}

export function createPendingSignIns(clock: Clock, serviceKey: Uint8Array): PendingSignIns {
  // A key of its own, derived from the service's secret, so this MAC never doubles as a token's or a code's.
  const key = createHmac('sha256', serviceKey).update('svc wallet pending sign-in v1').digest();
  const mac = (purpose: string, text: string): Buffer => createHmac('sha256', key).update(`${purpose}\n${text}`).digest();
  const same = (a: Buffer, b: Buffer): boolean => a.length === b.length && timingSafeEqual(a, b);

  return {
    seal(claims) {
      const now = clock.now();
      const sealed: Sealed = {
        n: randomBytes(16).toString('base64url'),
        sub: claims.sub,
        tier: claims.tier,
        exp: claims.exp,
        ...(claims.jti === undefined ? {} : { jti: claims.jti }),
        ...(claims.auth_time === undefined ? {} : { auth_time: claims.auth_time }),
        at: now,
      };
      const body = Buffer.from(JSON.stringify(sealed)).toString('base64url');
      const maxAgeSeconds = Math.max(1, Math.floor((expiresAt(sealed) - now) / 1000));
      return { value: `${body}.${mac('cookie', body).toString('base64url')}`, maxAgeSeconds };
    },

    open(value) {
      const [body, signature, ...rest] = (value ?? '').split('.');
      if (body === undefined || signature === undefined || rest.length > 0) return undefined;
      if (!same(Buffer.from(signature, 'base64url'), mac('cookie', body))) return undefined;
      const sealed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Sealed;
      const claims: SessionClaims = {
        sub: sealed.sub,
        tier: sealed.tier,
        exp: sealed.exp,
        ...(sealed.jti === undefined ? {} : { jti: sealed.jti }),
        ...(sealed.auth_time === undefined ? {} : { auth_time: sealed.auth_time }),
      };
      return { claims, user_id: normalizeEmail(sealed.sub), opened_at: sealed.at, expires_at: expiresAt(sealed), nonce: sealed.n };
    },

    formToken: (pending) => mac('form', pending.nonce).toString('base64url'),

    formTokenMatches: (pending, given) => pending !== undefined && same(Buffer.from(given, 'base64url'), mac('form', pending.nonce)),
  };
}

function expiresAt(sealed: Sealed): number {
  return Math.min(sealed.at + PENDING_SIGN_IN_SECONDS * 1000, sealed.exp * 1000);
}

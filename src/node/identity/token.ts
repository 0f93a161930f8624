// The access token as the node reads it: its claims, decoded without checking the signature (the node never holds
// the key: only the service's verify says whether a token is good), for display and for the local expiry checks
// of commands, status, doctor and the daemon.
import { SvcError } from '../../contract/errors.js';

/** Bound on a token read from a file or stdin: a JWT of ours is well under 1 KiB. */
export const MAX_TOKEN_BYTES = 8192;
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const DAY_MS = 86_400_000;

/**
 * A token this close to its expiry is flagged (status lists it as a problem, doctor warns, the daemon logs it), so
 * the operator signs in again before runs start failing.
 */
export const EXPIRY_WARNING_DAYS = 7;

export interface TokenClaims {
  sub: string;
  tier: string;
  exp: number;
  iat?: number;
  chainId?: number;
  nodeAccess?: string;
}

/**
 * The claims of an svc access token. Anything else is a token that is not valid, exit 4 as the README's table says
 * (`unauthorized`, as the service answers a token it does not accept), and never quoted.
 */
export function decodeClaims(token: string): TokenClaims {
  if (token.length > MAX_TOKEN_BYTES || !JWT_SHAPE.test(token))
    throw notOurToken('that is not a JWT (three base64url parts separated by dots)');
  let claims: Record<string, unknown>;
  try {
    claims = payloadOf(token);
  } catch {
    throw notOurToken('that is not a JWT: its payload is not JSON');
  }
  if (typeof claims.sub !== 'string' || typeof claims.tier !== 'string' || typeof claims.exp !== 'number') {
    throw notOurToken('the JWT lacks the sub, tier or exp claim of an svc access token');
  }
  return {
    sub: claims.sub,
    tier: claims.tier,
    exp: claims.exp,
    ...(typeof claims.iat === 'number' ? { iat: claims.iat } : {}),
    ...(typeof claims.chainId === 'number' ? { chainId: claims.chainId } : {}),
    ...(typeof claims.nodeAccess === 'string' ? { nodeAccess: claims.nodeAccess } : {}),
  };
}

function notOurToken(message: string): SvcError {
  return new SvcError('unauthorized', message, {
    remedy: 'Pass the jwtToken value the service issued, on its own; or sign in with a code mailed to you: swarm-node login',
  });
}

/** The exp claim (Unix seconds) of whatever token is stored, or undefined when it has none that can be read. */
export function expiryOf(token: string): number | undefined {
  try {
    const exp = payloadOf(token).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined;
  } catch {
    return undefined;
  }
}

/** The payload, the middle of the three parts: the one place a token is decoded. Throws when it is not JSON. */
function payloadOf(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (part === undefined) throw new Error('no payload');
  const payload: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  return (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
}

/** A token as read from a file or stdin: surrounding whitespace (a trailing newline) is not part of it. */
export function normalizeTokenText(text: string, from: string): string {
  const token = text.trim();
  if (token === '') throw new SvcError('usage', `no token in ${from}`);
  if (Buffer.byteLength(token) > MAX_TOKEN_BYTES)
    throw new SvcError('usage', `${from} holds more than a token (over ${MAX_TOKEN_BYTES} bytes)`);
  return token;
}

/** Days until `expMs`, counting a started day as one (a fresh token has 30); 0 once expired. */
export function daysLeft(expMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((expMs - nowMs) / DAY_MS));
}

/** Whether a token expiring at `expMs` is within EXPIRY_WARNING_DAYS of it (expired ones included). */
export function expiresSoon(expMs: number, nowMs: number): boolean {
  return expMs - nowMs <= EXPIRY_WARNING_DAYS * DAY_MS;
}

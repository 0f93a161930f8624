// spec §5 and docs/decisions/0005-tokens.md: access tokens are HS256 JWTs, 30 days, with spec §5.1's claims.
// Verification pins HS256, so alg:none and every other algorithm fail before any key is used.
import { randomUUID, webcrypto } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { CHAIN_ID, JWT_ALGORITHM, JWT_ISSUER, JWT_LIFETIME_SECONDS, NODE_ACCESS, type AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { EMAIL_PATTERN } from '../../contract/schemas.js';
import { isTierId } from '../../contract/tiers.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import type { Clock } from '../../lib/clock.js';
import type { ServiceSecrets } from '../secrets.js';
import type { Revocations } from './revocations.js';

export type InvalidTokenReason =
  | 'malformed'
  | 'unsupported_algorithm'
  | 'bad_signature'
  | 'expired'
  | 'unknown_key'
  | 'invalid_claims'
  /** Signed with our key, but never recorded at issue (docs/api.md "Revocation and sessions"). */
  | 'unknown_token'
  | 'revoked';

export class InvalidTokenError extends SvcError {
  constructor(readonly reason: InvalidTokenReason) {
    super('unauthorized', `the access token is invalid (${reason.replaceAll('_', ' ')})`);
  }
}

export interface IssuedToken {
  token: string;
  claims: AccessTokenClaims;
  kid: string;
}

export interface TokenService {
  /** `authTime`: when the subject proved its inbox, Unix seconds (the auth_time claim). */
  issue(subject: string, tier: string, authTime: number): Promise<IssuedToken>;
  /** Resolves to the claims of a valid token; rejects with InvalidTokenError otherwise. */
  verify(token: string): Promise<AccessTokenClaims>;
}

/** What the service recorded when it issued a token (issued_tokens), looked up once per token. */
export interface IssueRecord {
  sub: string;
  /** Milliseconds: a token revoked "before now" is compared at this precision, not the claim's whole seconds. */
  issued_at: number;
  revoked: boolean;
}

export interface TokenServiceDeps {
  /** The record of the token with this jti, or undefined: a token the service never issued is refused. */
  issueRecord(jti: string): Promise<IssueRecord | undefined>;
  revocations: Revocations;
}

const emailPattern = new RegExp(EMAIL_PATTERN);

/** How many verified tokens are remembered (the oldest goes first): the users active at once, with room to spare. */
const VERIFIED_TOKENS_KEPT = 4096;

export function createTokenService(secrets: Pick<ServiceSecrets, 'jwtKey' | 'jwtKid'>, clock: Clock, deps: TokenServiceDeps): TokenService {
  const { jwtKid } = secrets;
  // Imported once as a WebCrypto key: given the raw bytes, jose imports them again on every sign and verify
  // (measured: 27-39 µs a verify with the imported key, 83-171 µs with raw bytes).
  const keyReady = webcrypto.subtle.importKey('raw', secrets.jwtKey, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  // Tokens verified before, by their exact bytes (one spelling per token, isCanonicalCompactJws): a client sends the
  // same token with every call, and the HMAC over it was a tenth of an execute's CPU. Only the signature and the
  // issue record are remembered; the time and revocation checks run at every use, in memory, so a remembered token
  // still expires, and is refused once revoked, on time.
  const verified = new Map<string, { claims: AccessTokenClaims; issuedAtMs: number }>();
  const remember = (token: string, claims: AccessTokenClaims, issuedAtMs: number): void => {
    if (verified.size >= VERIFIED_TOKENS_KEPT) verified.delete(verified.keys().next().value!);
    verified.set(token, { claims, issuedAtMs });
  };
  const usable = (claims: AccessTokenClaims, issuedAtMs: number): AccessTokenClaims => {
    if (deps.revocations.isRevoked(claims.sub, claims.jti, issuedAtMs)) throw new InvalidTokenError('revoked');
    return claims;
  };
  return {
    async issue(subject, tier, authTime) {
      const iat = Math.floor(clock.now() / 1000);
      const claims: AccessTokenClaims = {
        sub: subject,
        tier,
        chainId: CHAIN_ID,
        nodeAccess: NODE_ACCESS,
        iss: JWT_ISSUER,
        iat,
        exp: iat + JWT_LIFETIME_SECONDS,
        jti: randomUUID(),
        auth_time: authTime,
      };
      const { sub, iss, exp, jti: _jti, ...custom } = claims;
      const jwtKey = await keyReady;
      const token = await new SignJWT(custom)
        .setProtectedHeader({ alg: JWT_ALGORITHM, typ: 'JWT', kid: jwtKid })
        .setSubject(sub)
        .setIssuer(iss)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setJti(claims.jti!)
        .sign(jwtKey);
      return { token, claims, kid: jwtKid };
    },

    async verify(token) {
      // RFC 8725 §3.2 spirit, RFC 7515 §2: one encoding per token. jose decodes leniently (a trailing "=" still
      // verifies), which would give one signed token many spellings, each its own key for caches and logs.
      const known = verified.get(token);
      if (known !== undefined) {
        const now = clock.now();
        if (known.claims.exp <= now / 1000) throw new InvalidTokenError('expired');
        if (!plausibleLifetime(known.claims, now)) throw new InvalidTokenError('invalid_claims');
        return usable(known.claims, known.issuedAtMs);
      }
      if (!isCanonicalCompactJws(token)) throw new InvalidTokenError('malformed');
      const jwtKey = await keyReady;
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(
          token,
          (header) => {
            // A token from another HS256 implementation may carry no kid; one naming another key is refused.
            if (header.kid !== undefined && header.kid !== jwtKid) throw new InvalidTokenError('unknown_key');
            return jwtKey;
          },
          {
            algorithms: [JWT_ALGORITHM],
            issuer: JWT_ISSUER,
            requiredClaims: ['sub', 'iat', 'exp'],
            currentDate: new Date(clock.now()),
          },
        ));
      } catch (error) {
        throw toInvalidTokenError(error);
      }
      if (!hasAccessClaims(payload) || !plausibleLifetime(payload, clock.now())) throw new InvalidTokenError('invalid_claims');
      // Correctly signed is not enough: the service must have issued it (recorded at issue, so it can be revoked).
      const record = payload.jti === undefined ? undefined : await deps.issueRecord(payload.jti);
      if (record === undefined || record.sub !== payload.sub) throw new InvalidTokenError('unknown_token');
      if (record.revoked) throw new InvalidTokenError('revoked');
      remember(token, payload, record.issued_at);
      return usable(payload, record.issued_at);
    },
  };
}

const jtiPattern = new RegExp(UUID_PATTERN);

function hasAccessClaims(payload: Record<string, unknown>): payload is AccessTokenClaims & Record<string, unknown> {
  return (
    typeof payload.sub === 'string' &&
    emailPattern.test(payload.sub) &&
    isTierId(payload.tier) &&
    payload.chainId === CHAIN_ID &&
    payload.nodeAccess === NODE_ACCESS &&
    Number.isInteger(payload.iat) &&
    Number.isInteger(payload.exp) &&
    // Ours is a UUID (issue()): any other jti, U+0000 in it say, is no token of ours, and is never looked up.
    (payload.jti === undefined || (typeof payload.jti === 'string' && jtiPattern.test(payload.jti))) &&
    (payload.auth_time === undefined || Number.isInteger(payload.auth_time))
  );
}

/** How far a token's iat may lie ahead of our clock: clocks of well-run hosts agree within seconds. */
export const MAX_CLOCK_SKEW_SECONDS = 60;

/**
 * RFC 8725 §3.10 (validate every claim): a token must say when it was issued, not in the future beyond the skew,
 * and live no longer than spec §5.1's 30 days; the sign-in it carries (auth_time) came before it, after 1970. A
 * token signed with our key but claiming a longer life (or issued "tomorrow" to outlive its exp, or a sign-in in
 * the year 30,000) is not one the service issued.
 */
function plausibleLifetime(claims: AccessTokenClaims, nowMs: number): boolean {
  const signedIn = claims.auth_time === undefined || (claims.auth_time >= 0 && claims.auth_time <= claims.iat);
  return (
    signedIn &&
    claims.iat <= nowMs / 1000 + MAX_CLOCK_SKEW_SECONDS &&
    claims.exp > claims.iat &&
    claims.exp - claims.iat <= JWT_LIFETIME_SECONDS
  );
}

// An empty segment is allowed here: an unsigned (alg "none") token is refused for its algorithm, a clearer reason.
const BASE64URL_SEGMENT = /^[A-Za-z0-9_-]*$/;

/** Three unpadded base64url segments, each the one encoding of its bytes (no stray bits in the last character). */
function isCanonicalCompactJws(token: string): boolean {
  const segments = token.split('.');
  return (
    segments.length === 3 &&
    segments.every((segment) => BASE64URL_SEGMENT.test(segment) && Buffer.from(segment, 'base64url').toString('base64url') === segment)
  );
}

function toInvalidTokenError(error: unknown): InvalidTokenError {
  if (error instanceof InvalidTokenError) return error;
  if (error instanceof joseErrors.JWTExpired) return new InvalidTokenError('expired');
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return new InvalidTokenError('bad_signature');
  if (error instanceof joseErrors.JWTClaimValidationFailed) return new InvalidTokenError('invalid_claims');
  // alg:none, HS512 and every algorithm but the pinned HS256.
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) {
    return new InvalidTokenError('unsupported_algorithm');
  }
  return new InvalidTokenError('malformed');
}

// Step-up (docs/api.md "Step-up"): what changes the fleet or the code (a deploy token, an upload or a change of the
// current upload, a node's removal or its credential's rotation, secrets, webhooks), and what raises a spending limit
// (contract/spending-limits.ts), needs a sign-in with the inbox proof within STEP_UP_MAX_AGE_SECONDS, the token's
// auth_time. A JWT copied from a disk is still the user's for
// reading and running, but cannot enrol a node or change what runs. The refusal is RFC 9470's: 401 with
// `WWW-Authenticate: Bearer error="insufficient_user_authentication", max_age=900`.
import { STEP_UP_MAX_AGE_SECONDS, type AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';

/** Whether an inbox proven at `authTime` (Unix seconds; undefined: never) is recent at `nowMs`; a time ahead of the clock by more than a minute is not. */
export function isRecentSignIn(authTime: number | undefined, nowMs: number): boolean {
  return authTime !== undefined && nowMs / 1000 - authTime <= STEP_UP_MAX_AGE_SECONDS && authTime <= nowMs / 1000 + 60;
}

/** `what`: the change refused, as the refusal names it (a raised spending limit says so: it is no change of the fleet). */
export function requireRecentSignIn(claims: AccessTokenClaims, nowMs: number, what = 'this changes your fleet or your code'): void {
  const authTime = claims.auth_time;
  if (isRecentSignIn(authTime, nowMs)) return;
  throw new SvcError('step_up_required', `${what}, and needs a sign-in within the last ${STEP_UP_MAX_AGE_SECONDS / 60} minutes`, {
    remedy: `Sign in again with the code mailed to you: swarm-node login --email ${claims.sub}; then retry.`,
    extensions: {
      max_age: STEP_UP_MAX_AGE_SECONDS,
      ...(authTime === undefined ? {} : { auth_time: new Date(authTime * 1000).toISOString() }),
    },
  });
}

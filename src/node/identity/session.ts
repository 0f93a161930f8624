// Signing the node in and out (`login`, `logout`, `whoami`; docs/api.md "Sign-in: a verified inbox"): the service
// mails a code to the address, the person types it back, and the JWT issued for it lives only in the credentials
// file (0600) and in request headers; nothing here prints it or puts it in an error message. Signing out revokes the
// token at the service, not only here.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { isTierId, TIER_IDS, TIERS, type TierId } from '../../contract/tiers.js';
import type { Clock } from '../../lib/clock.js';
import { requestEmailCode, revokeTokens } from '../service/account-api.js';
import type { ServiceClient } from '../service/service-client.js';
import { readCredentials, updateCredentials, type StoredJwt } from './credentials.js';
import { loginCommandFor } from './sign-in-remedy.js';
import { daysLeft, decodeClaims, type TokenClaims } from './token.js';

export interface SignedIn {
  sub: string;
  tier: string;
  expires_at: string;
  days_left: number;
  docs_sections: string[];
  payment_rail: string | undefined;
  chainId: number | undefined;
  nodeAccess: string | undefined;
  credentials_file: string;
}

export interface SessionDeps {
  client: ServiceClient;
  clock: Clock;
  credentialsFile: string;
}

/** A code asked for and not yet used, kept in the credentials file so `login --send-code` and the next login meet. */
export interface PendingSignIn {
  email: string;
  challenge_id: string;
  expires_at: string;
}

/** Mails a sign-in code to `email` and keeps its challenge for the login that types the code. */
export async function sendSignInCode(deps: SessionDeps, email: string): Promise<PendingSignIn> {
  const address = normalizeEmail(email);
  const challenge = await requestEmailCode(deps.client, address);
  const pending: PendingSignIn = { email: address, challenge_id: challenge.challenge_id, expires_at: challenge.expires_at };
  updateCredentials(deps.credentialsFile, (current) => ({ ...current, pending_sign_in: pending }));
  return pending;
}

/** The code asked for earlier for `email`, while it can still be used; undefined otherwise. */
export function pendingSignIn(deps: Pick<SessionDeps, 'clock' | 'credentialsFile'>, email: string): PendingSignIn | undefined {
  const pending = readCredentials(deps.credentialsFile).pending_sign_in;
  if (pending === undefined || pending.email !== normalizeEmail(email) || Date.parse(pending.expires_at) <= deps.clock.now())
    return undefined;
  return pending;
}

export interface MailSignIn {
  email: string;
  offer: TierId | undefined;
  likelyOffer: TierId | undefined;
  merchantId: string;
}

/**
 * How the code reaches the sign-in: typed at a prompt, read from a file or from standard input. `wrong`: the code
 * typed before was refused, and the challenge takes this many more tries (asked again only where a person types).
 */
export type ReadCode = (pending: PendingSignIn, sentNow: boolean, wrong?: { attemptsLeft: number }) => Promise<string>;

export interface MailSignInOptions {
  /** A refused code is asked for again while its challenge takes tries (a person at a prompt, not a file). */
  retypeWrongCode?: boolean;
  /** The command that starts the sign-in over, for the remedy: `swarm-node login --email …` unless told. */
  again?: string;
}

/**
 * The whole sign-in by mail: the code asked for earlier (`login --send-code`) while it lasts, else a new one mailed
 * now; then the code, read as `readCode` says, and the token issued for it.
 */
export async function signInByMail(
  deps: SessionDeps,
  input: MailSignIn,
  readCode: ReadCode,
  options: MailSignInOptions = {},
): Promise<SignedIn> {
  const earlier = pendingSignIn(deps, input.email);
  const pending = earlier ?? (await sendSignInCode(deps, input.email));
  let code = await readCode(pending, earlier === undefined);
  for (;;) {
    try {
      return await signInWithCode(deps, { ...input, pending, code, ...(options.again === undefined ? {} : { again: options.again }) });
    } catch (error) {
      const left = attemptsLeftOf(error);
      // A challenge that takes no more tries is of no use to the next sign-in: it mails a new code instead.
      if (left === 0) updateCredentials(deps.credentialsFile, ({ pending_sign_in: _spent, ...rest }) => rest);
      if (options.retypeWrongCode !== true || left === undefined || left === 0) throw error;
      code = await readCode(pending, false, { attemptsLeft: left });
    }
  }
}

/** email_code_invalid's attempts_left (docs/api.md "Sign-in: a verified inbox"); undefined for any other error. */
function attemptsLeftOf(error: unknown): number | undefined {
  if (!(error instanceof SvcError) || error.code !== 'email_code_invalid') return undefined;
  const left = error.extensions.attempts_left;
  return typeof left === 'number' ? left : undefined;
}

export interface CodeSignIn {
  email: string;
  /** The offer asked for; undefined lets the service's answer pick one the address paid for. */
  offer: TierId | undefined;
  /** The offer to try first when none was asked for (this node's, the last sign-in's). */
  likelyOffer: TierId | undefined;
  merchantId: string;
  pending: PendingSignIn;
  code: string;
  /** The command that starts the sign-in over (MailSignInOptions.again). */
  again?: string;
}

/**
 * issue-token with the code, keep the JWT, then verify it for its sections. With no offer asked for, a refusal that
 * names the offers the address paid for (said only once the code proved the inbox) is retried with the best of them,
 * with the same code: the person never has to know the tier's id to sign in.
 */
export async function signInWithCode(deps: SessionDeps, input: CodeSignIn): Promise<SignedIn> {
  const first = input.offer ?? input.likelyOffer ?? 'svc_starter_agents';
  let issued;
  try {
    issued = await issue(deps, input, first);
  } catch (error) {
    const other =
      input.offer === undefined && error instanceof SvcError && error.code === 'payment_not_found'
        ? bestPaidOffer(error.extensions.paid_offers)
        : undefined;
    if (other === undefined || other === first) throw error instanceof SvcError ? signInRefusal(error, input) : error;
    try {
      issued = await issue(deps, input, other);
    } catch (retryError) {
      throw retryError instanceof SvcError ? signInRefusal(retryError, input) : retryError;
    }
  }
  const token = issued.jwtToken;
  // The service just issued it: keep it first, so a failed verify below does not lose the sign-in.
  storeToken(deps, token, decodeClaims(token));
  updateCredentials(deps.credentialsFile, ({ pending_sign_in: _used, ...rest }) => rest);
  return verifyToken(deps, token);
}

function issue(deps: SessionDeps, input: CodeSignIn, offer: TierId) {
  return deps.client.issueToken({
    status: PAYMENT_CONFIRMED,
    offer_id: offer,
    customer_email: input.email,
    merchant_id: input.merchantId,
    challenge_id: input.pending.challenge_id,
    code: input.code,
  });
}

/** Of the offers an address paid for, the one a node needs: execution first, a wallet top-up last. */
function bestPaidOffer(paid: unknown): TierId | undefined {
  const offers = Array.isArray(paid) ? paid.filter(isTierId) : [];
  return [...offers].sort(
    (a, b) => Number(TIERS[b].node_install) - Number(TIERS[a].node_install) || TIER_IDS.indexOf(a) - TIER_IDS.indexOf(b),
  )[0];
}

/** Each refusal said as the person at the keyboard can act on it, in login's own flags. */
function signInRefusal(error: SvcError, input: CodeSignIn): SvcError {
  const again = input.again ?? loginCommandFor(input.email);
  const paid = Array.isArray(error.extensions.paid_offers) ? (error.extensions.paid_offers as string[]) : [];
  const remedy: Partial<Record<SvcError['code'], string>> = {
    email_code_invalid:
      error.extensions.attempts_left === 0
        ? `This code takes no more tries (typed wrong too often, expired, or used): get a new one mailed to ${input.email}: ${again}`
        : `Type the code of the newest sign-in mail to ${input.email}, or get a new one: ${again}`,
    payment_not_found:
      paid.length === 0
        ? `${input.email} has paid for nothing yet: pay at the payment provider with this address, wait for its confirmation, then run ${again}`
        : `Sign in for an offer you paid for: ${again} --offer ${paid[0]}`,
    payment_not_confirmed: `Wait for the payment provider to confirm the payment, then run ${again}`,
  };
  const better = remedy[error.code];
  if (better === undefined) return error;
  return new SvcError(error.code, error.message, {
    remedy: better,
    extensions: error.extensions,
    status: error.status,
    ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
  });
}

/** Keeps a JWT obtained elsewhere, once the service has said it is valid. */
export async function loginWithToken(deps: SessionDeps, token: string): Promise<SignedIn> {
  const claims = decodeClaims(token);
  const signedIn = await verifyToken(deps, token);
  storeToken(deps, token, claims);
  return signedIn;
}

/** Asks the service about a token; valid:false is an error (exit 4) carrying the service's reason. */
export async function verifyToken(deps: SessionDeps, token: string): Promise<SignedIn> {
  const claims = decodeClaims(token);
  const verdict = await deps.client.verify(token);
  if (!verdict.valid) {
    throw new SvcError('unauthorized', `the service does not accept the token: ${verdict.reason ?? 'invalid'}`, {
      remedy: `Sign in again: ${loginCommandFor(claims.sub)}`,
    });
  }
  const expMs = verdict.expires_at !== undefined ? Date.parse(verdict.expires_at) : claims.exp * 1000;
  return {
    sub: verdict.sub ?? claims.sub,
    tier: verdict.tier_key ?? claims.tier,
    expires_at: new Date(expMs).toISOString(),
    days_left: daysLeft(expMs, deps.clock.now()),
    docs_sections: verdict.docs_sections ?? [],
    payment_rail: verdict.payment_rail,
    chainId: claims.chainId,
    nodeAccess: claims.nodeAccess,
    credentials_file: deps.credentialsFile,
  };
}

export function storeToken(deps: Pick<SessionDeps, 'clock' | 'credentialsFile'>, token: string, claims: TokenClaims): StoredJwt {
  const jwt: StoredJwt = {
    token,
    sub: claims.sub,
    tier: claims.tier,
    exp: claims.exp,
    stored_at: new Date(deps.clock.now()).toISOString(),
  };
  updateCredentials(deps.credentialsFile, (current) => ({ ...current, jwt }));
  return jwt;
}

export interface SignedOut {
  signed_out: boolean;
  sub: string | undefined;
  /** Tokens the service revoked: this one, or every one of the user (everywhere). */
  revoked: number;
  everywhere: boolean;
  /** Forgotten here without telling the service (--local): the token stays valid until it expires. */
  local_only: boolean;
  /** The schedules the service paused, when it paused some: those the revoked tokens made or last resumed. */
  schedules_paused?: string[];
}

/**
 * Revokes the stored JWT at the service (or every token of its user), then forgets it. The node's enrollment stays
 * (it belongs to the install, not to a sign-in). When the service cannot be told, nothing is forgotten unless
 * `localOnly`: a token deleted here but valid there is what a thief who copied it would want.
 */
export async function logout(deps: SessionDeps, options: { everywhere: boolean; localOnly: boolean }): Promise<SignedOut> {
  const previous = readCredentials(deps.credentialsFile).jwt;
  if (previous === undefined) return { signed_out: false, sub: undefined, revoked: 0, everywhere: false, local_only: options.localOnly };
  let revoked = 0;
  let paused: string[] = [];
  if (!options.localOnly) {
    try {
      const answer = await revokeTokens(deps.client, previous.token, options.everywhere);
      revoked = answer.revoked;
      paused = answer.schedules_paused ?? [];
    } catch (error) {
      // Expired or revoked already: nothing left to revoke here (but "everywhere", which needs a live token).
      if (!(error instanceof SvcError && error.code === 'unauthorized' && !options.everywhere)) throw error;
    }
  }
  updateCredentials(deps.credentialsFile, ({ jwt: _dropped, ...rest }) => rest);
  const signedOut = { signed_out: true, sub: previous.sub, revoked, everywhere: options.everywhere, local_only: options.localOnly };
  return paused.length === 0 ? signedOut : { ...signedOut, schedules_paused: paused };
}

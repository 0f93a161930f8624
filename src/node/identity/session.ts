// Signing the node in and out (issue 3 `login`, `logout`, `whoami`): the JWT lives only in the credentials file
// (0600) and in request headers; nothing here prints it or puts it in an error message.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { isTierId, type TierId } from '../../contract/tiers.js';
import type { Clock } from '../../lib/clock.js';
import { readCredentials, updateCredentials, type NodeEnrollment, type StoredJwt } from './credentials.js';
import type { ServiceClient } from '../service/service-client.js';
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

/** What proves the payment to issue-token: the provider's payment id, or this node's enrollment (docs/api.md). */
export type PaymentProof = { paymentId: string } | { nodeCredential: string };

export interface PaymentLogin {
  email: string;
  offer: TierId;
  merchantId: string;
  proof: PaymentProof;
}

/** issue-token for a confirmed payment, keep the JWT, then verify it for its sections. */
export async function loginWithPayment(deps: SessionDeps, input: PaymentLogin): Promise<SignedIn> {
  let issued;
  try {
    issued = await deps.client.issueToken(
      {
        status: PAYMENT_CONFIRMED,
        offer_id: input.offer,
        customer_email: input.email,
        merchant_id: input.merchantId,
        ...('paymentId' in input.proof ? { payment_id: input.proof.paymentId } : {}),
      },
      'nodeCredential' in input.proof ? input.proof.nodeCredential : undefined,
    );
  } catch (error) {
    throw error instanceof SvcError ? loginRefusal(error, input) : error;
  }
  const token = issued.jwtToken;
  // The service just issued it: keep it first, so a failed verify below does not lose a paid-for token.
  storeToken(deps, token, decodeClaims(token));
  return verifyToken(deps, token);
}

/** An enrolled node signs in as its own user and offer with its node credential: no payment id needed. */
export function nodeLogin(node: NodeEnrollment, merchantId: string): PaymentLogin | undefined {
  if (node.credential === undefined || !isTierId(node.tier_id)) return undefined;
  return { email: node.user_id, offer: node.tier_id, merchantId, proof: { nodeCredential: node.credential } };
}

/**
 * Each refusal of issue-token as the person at the keyboard can act on it: the exit code follows the code (not
 * found: 5, not confirmed: 7), and the remedy speaks of login's flags, not of the API's body fields.
 */
function loginRefusal(error: SvcError, input: PaymentLogin): SvcError {
  const asNode = 'nodeCredential' in input.proof;
  const again = (flags: string): string => `swarm-node login ${flags}`;
  const remedy: Partial<Record<SvcError['code'], string>> = {
    payment_not_found: `Use the e-mail you paid with and the payment id from checkout: ${again(`--email <checkout e-mail> --offer ${input.offer} --payment <payment_id>`)}.`,
    payment_not_confirmed: `Wait for the payment provider to confirm the payment, then run ${again(asNode ? '' : `--email ${input.email} --offer ${input.offer} --payment <payment_id>`).trim()} again.`,
    payment_mismatch: `The payment was made for ${typeof error.extensions.payment_offer_id === 'string' ? `the offer ${error.extensions.payment_offer_id}` : 'another offer'}: sign in with that offer (--offer).`,
    forbidden: `This node is enrolled for another e-mail or offer: run ${again('')} with no options to sign in as the node's own user, or give --payment.`,
    unauthorized: asNode
      ? `The service does not know this node's credential: enroll it again (swarm-node install with a fresh deploy token), or sign in with ${again('--email <e> --offer <o> --payment <id>')}.`
      : undefined,
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

/** How `login` signs in: with a JWT given by file, stdin or SVC_JWT, or through issue-token with a proof of payment. */
export type SignInWith = { token: string } | { login: PaymentLogin };

export function signIn(deps: SessionDeps, how: SignInWith): Promise<SignedIn> {
  return 'token' in how ? loginWithToken(deps, how.token) : loginWithPayment(deps, how.login);
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
      remedy: 'Sign in again: swarm-node login --email <email> --offer <tier_id>.',
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
  const jwt: StoredJwt = { token, sub: claims.sub, tier: claims.tier, exp: claims.exp, stored_at: new Date(deps.clock.now()).toISOString() };
  updateCredentials(deps.credentialsFile, (current) => ({ ...current, jwt }));
  return jwt;
}

/** Forgets the JWT; the node's enrollment stays (it belongs to the install, not to a sign-in). */
export function logout(credentialsFile: string): { signed_out: boolean; sub: string | undefined } {
  const previous = readCredentials(credentialsFile).jwt;
  if (previous === undefined) return { signed_out: false, sub: undefined };
  updateCredentials(credentialsFile, ({ jwt: _dropped, ...rest }) => rest);
  return { signed_out: true, sub: previous.sub };
}

// Wizard step a: sign in only when this node holds no JWT the service accepts (spec §4 issue-token, §7 payment
// not confirmed: wait and retry).
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import { readCredentials, type StoredJwt } from '../identity/credentials.js';
import { loginWithPayment, nodeLogin, verifyToken, type PaymentLogin, type SignedIn } from '../identity/session.js';
import type { WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export interface SignInOutcome {
  jwt: StoredJwt;
  signedIn: SignedIn;
  /** The wizard signed in now (issue-token), rather than finding a valid token. */
  signed_in_now: boolean;
}

/** Whether the wizard must ask who the user is: no usable stored token, and no node credential to sign in with. */
export function needsSignInAnswers(credentialsFile: string, nowMs: number, email: string | undefined): boolean {
  return usableStoredJwt(credentialsFile, nowMs, email) === undefined && enrolledNodeLogin(credentialsFile, '', email) === undefined;
}

/** The sign-in of an enrolled node (its credential proves the payment), unless another e-mail was asked for. */
function enrolledNodeLogin(credentialsFile: string, merchantId: string, email: string | undefined): PaymentLogin | undefined {
  const node = readCredentials(credentialsFile).node;
  const login = node === undefined ? undefined : nodeLogin(node, merchantId);
  if (login === undefined || (email !== undefined && normalizeEmail(email) !== normalizeEmail(login.email))) return undefined;
  return login;
}

/** A stored token that has not expired by the local clock: worth asking the service about. */
export function usableStoredJwt(credentialsFile: string, nowMs: number, email: string | undefined): StoredJwt | undefined {
  const jwt = readCredentials(credentialsFile).jwt;
  if (jwt === undefined || jwt.exp * 1000 <= nowMs) return undefined;
  // Another e-mail on the command line means signing in as that user.
  if (email !== undefined && normalizeEmail(email) !== normalizeEmail(jwt.sub)) return undefined;
  return jwt;
}

export async function ensureSignedIn(
  deps: WizardStepDeps & { merchantId: string },
  questions: WizardQuestions,
  flagEmail: string | undefined,
): Promise<SignInOutcome> {
  const session = { client: deps.client, clock: deps.clock, credentialsFile: deps.credentialsFile };
  const stored = usableStoredJwt(deps.credentialsFile, deps.clock.now(), flagEmail);
  if (stored !== undefined) {
    try {
      const signedIn = await deps.ui.spin('Checking the stored access token', () => verifyToken(session, stored.token));
      deps.ui.success(`Signed in as ${signedIn.sub} (${tierName(signedIn.tier)}, ${signedIn.days_left} days left).`);
      return { jwt: stored, signedIn, signed_in_now: false };
    } catch (error) {
      if (!(error instanceof SvcError) || error.code !== 'unauthorized') throw error;
      deps.ui.warn(`${error.message}; sign in again`);
    }
  }

  const asNode = enrolledNodeLogin(deps.credentialsFile, deps.merchantId, flagEmail);
  let answers: PaymentLogin;
  if (asNode !== undefined) {
    deps.ui.info(`Signing in as this node's user, ${asNode.email} (its enrollment proves the payment).`);
    answers = asNode;
  } else {
    const previous = readCredentials(deps.credentialsFile).jwt;
    deps.ui.info('Sign in with the e-mail, the offer and the payment id of your checkout.');
    const email = await questions.email(previous?.sub);
    const offer = await questions.offer(previous !== undefined && previous.tier in TIERS ? (previous.tier as TierId) : 'svc_starter_agents');
    const paymentId = await questions.payment();
    answers = { email, offer, merchantId: deps.merchantId, proof: { paymentId } };
  }
  const { email, offer } = answers;
  const login = (): Promise<SignedIn> => loginWithPayment(session, answers);

  let signedIn: SignedIn;
  try {
    signedIn = await deps.ui.spin(`Signing in as ${email}`, login);
  } catch (error) {
    if (!(error instanceof SvcError) || error.code !== 'payment_not_confirmed') throw error;
    // spec §7: wait for the provider's confirmation, then retry.
    deps.ui.warn(`the ${tierName(offer)} payment of ${email} is not confirmed yet`);
    deps.ui.info('The payment provider confirms a payment a little after checkout; the wizard can wait for it and retry.');
    if (!(await questions.waitForPayment())) {
      throw new SvcError('payment_not_confirmed', error.message, {
        remedy: 'Wait for the payment provider to confirm the payment, then run swarm-node wizard again.',
        extensions: error.extensions,
      });
    }
    signedIn = await deps.ui.spin('Waiting for the payment to be confirmed (Ctrl+C quits)', async (update) => {
      const confirmed = await retryUntilConfirmed(deps, login, error);
      update('Waiting for the payment to be confirmed');
      return confirmed;
    });
  }
  const jwt = readCredentials(deps.credentialsFile).jwt!;
  deps.ui.success(`Signed in as ${signedIn.sub} (${tierName(signedIn.tier)}); the token is kept in ${deps.credentialsFile} (mode 0600).`);
  return { jwt, signedIn, signed_in_now: true };
}

async function retryUntilConfirmed(deps: WizardStepDeps, login: () => Promise<SignedIn>, first: SvcError): Promise<SignedIn> {
  let last = first;
  for (;;) {
    await deps.sleep(Math.max(deps.pollIntervalMs, (last.retryAfterSeconds ?? 0) * 1000));
    try {
      return await login();
    } catch (error) {
      if (!(error instanceof SvcError) || error.code !== 'payment_not_confirmed') throw error;
      last = error;
    }
  }
}

export function tierName(tier: string): string {
  return tier in TIERS ? TIERS[tier as TierId].name : tier;
}

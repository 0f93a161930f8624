// Wizard step a: sign in only when this node holds no JWT the service accepts; then by a code mailed to the address
// (docs/api.md "Sign-in: a verified inbox"), as `swarm-node login` does.
import { SvcError } from '../../contract/errors.js';
import { isTierId, TIERS } from '../../contract/tiers.js';
import { readCredentials, usableStoredJwt, type StoredJwt } from '../identity/credentials.js';
import { signInByMail, verifyToken, type ReadCode, type SignedIn } from '../identity/session.js';
import type { WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export interface SignInOutcome {
  jwt: StoredJwt;
  signedIn: SignedIn;
  /** The wizard signed in now (issue-token), rather than finding a valid token. */
  signed_in_now: boolean;
}

/** Whether the wizard must sign in: no stored token that may still be good (for the --email asked for). */
export function needsSignInAnswers(credentialsFile: string, nowMs: number, email: string | undefined): boolean {
  return usableStoredJwt(credentialsFile, nowMs, email) === undefined;
}

export async function ensureSignedIn(
  deps: WizardStepDeps & { merchantId: string; readCode: ReadCode; retypeWrongCode: boolean; wizardAgain: (email: string) => string },
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

  const known = readCredentials(deps.credentialsFile);
  deps.ui.info('Sign in with the e-mail address you paid with: the service mails it a code to type here.');
  const email = await questions.email(known.jwt?.sub ?? known.node?.user_id);
  const offer = await questions.offer();
  const likelyOffer = [known.node?.tier_id, known.jwt?.tier].find(isTierId);
  // A mistyped code is asked again with the tries left; once they are spent, the wizard starts over (a new code).
  const signedIn = await signInByMail(session, { email, offer, likelyOffer, merchantId: deps.merchantId }, deps.readCode, {
    retypeWrongCode: deps.retypeWrongCode,
    again: deps.wizardAgain(email),
  });
  const jwt = readCredentials(deps.credentialsFile).jwt!;
  deps.ui.success(`Signed in as ${signedIn.sub} (${tierName(signedIn.tier)}); the token is kept in ${deps.credentialsFile} (mode 0600).`);
  return { jwt, signedIn, signed_in_now: true };
}

export function tierName(tier: string): string {
  return tier in TIERS ? TIERS[tier as keyof typeof TIERS].name : tier;
}

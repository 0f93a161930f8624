// Step-up in the console (docs/api.md "Step-up", "Console"): what changes secrets or webhooks, or raises a budget,
// needs the session's user to have proven the inbox within 15 minutes, as the API asks of a JWT's auth_time. The
// session carries the time of the JWT it was made from, and the console's own code confirmation (confirm-page.ts)
// renews it.
import { STEP_UP_MAX_AGE_SECONDS } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { isRecentSignIn } from '../auth/step-up.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import type { WalletSession } from '../wallet-page/wallet-sessions.js';
import { timeElement } from './format.js';

/** The pages a confirmation returns to: never a URL taken from the request. */
export const CONFIRM_RETURNS = ['secrets', 'webhooks', 'budgets', 'nodes'] as const;
export type ConfirmReturn = (typeof CONFIRM_RETURNS)[number];

export function hasRecentSignIn(session: WalletSession, nowMs: number): boolean {
  return isRecentSignIn(session.auth_time === null ? undefined : Math.floor(session.auth_time / 1000), nowMs);
}

/** Until when the session may change secrets and webhooks; undefined when it may not now. */
export function recentUntil(session: WalletSession, nowMs: number): number | undefined {
  return hasRecentSignIn(session, nowMs) ? session.auth_time! + STEP_UP_MAX_AGE_SECONDS * 1000 : undefined;
}

/** 401 step_up_required, as the API answers a JWT too old for the change; the page says how to confirm. */
/** `what`: the change refused, as the page says it; the page that offers the confirmation is the one of the form. */
export function requireRecentSession(session: WalletSession, nowMs: number, what = 'this changes what your agents are handed'): void {
  if (hasRecentSignIn(session, nowMs)) return;
  const minutes = STEP_UP_MAX_AGE_SECONDS / 60;
  throw new SvcError('step_up_required', `${what}, and needs a sign-in within the last ${minutes} minutes; nothing was changed`, {
    remedy: 'Confirm it is you with a code mailed to you (this page offers it), then send the form again.',
  });
}

/** What a page that changes secrets or webhooks shows: until when it may, or the button that mails a code. */
export function recentSignInPanel(base: string, until: number | undefined, returnTo: ConfirmReturn, what: string): SafeHtml {
  if (until !== undefined) return html`<p class="muted">You signed in recently: you may change ${what} until ${timeElement(until)}.</p>`;
  return html`<section class="panel" aria-labelledby="confirm-heading">
<h2 id="confirm-heading">Confirm it is you</h2>
<p>Changing ${what} needs a sign-in within the last ${STEP_UP_MAX_AGE_SECONDS / 60} minutes. We will mail a code to your address; type it on the next page.</p>
<form method="post" action="${base}confirm/send"><input type="hidden" name="return" value="${returnTo}"><button type="submit">E-mail me a code</button></form>
</section>`;
}

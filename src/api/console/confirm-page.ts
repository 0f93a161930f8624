// The console's step-up (docs/api.md "Console"): a code mailed to the session's address, typed back here, renews the
// session's recent sign-in, as `swarm-node login` renews a JWT's. The mail and its checks are the sign-in's own
// (auth/email-codes.ts): a code works once, for 10 minutes, with 5 tries, and an address gets 5 codes an hour.
import { CODE_LIFETIME_MINUTES } from '../auth/email-codes.js';
import { html } from '../wallet-page/html.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import type { ConfirmReturn } from './recent-sign-in.js';

export interface ConfirmModel {
  returnTo: ConfirmReturn;
  challengeId: string;
  /** What the mail names the challenge by (its first 8 hex digits). */
  reference: string;
  error?: string;
}

export function confirmPage(frame: ConsoleFrame, model: ConfirmModel): string {
  return consolePage(
    frame,
    'Confirm it is you',
    html`<h1>Confirm it is you</h1>
<section aria-labelledby="code-heading">
<h2 id="code-heading">Type the code we mailed you</h2>
<p>We mailed a code to <strong>${frame.email}</strong>, reference <code>${model.reference}</code>. It works once, for ${CODE_LIFETIME_MINUTES} minutes.</p>
${model.error === undefined ? null : html`<p class="alert" role="alert" id="code-error">${model.error}</p>`}
<form method="post" action="${frame.base}confirm">
<input type="hidden" name="challenge_id" value="${model.challengeId}">
<input type="hidden" name="return" value="${model.returnTo}">
<div class="field"><label for="confirm-code">Code from the e-mail</label>
<input id="confirm-code" name="code" inputmode="numeric" autocomplete="one-time-code" required maxlength="16" placeholder="1234-5678"${model.error === undefined ? null : html` aria-invalid="true" aria-describedby="code-error"`}></div>
<button type="submit">Confirm</button>
</form>
<form method="post" action="${frame.base}confirm/send"><input type="hidden" name="return" value="${model.returnTo}"><button type="submit" class="secondary">Mail me a new code</button></form>
</section>`,
  );
}

// The page a sign-in link leads to when the browser did not come from its address bar (docs/api.md "Wallet page"):
// it names the account the link signs in as, and the session it would end, and signs in only by its button.
import { html, page } from './html.js';

export interface ContinueModel {
  /** The address the link signs in as. */
  email: string;
  /** The address of this browser's session, when it is another account's: the button switches from it. */
  signedInAs?: string;
  /** The form's token (pending-sign-in.ts). */
  formToken: string;
}

export function continuePage(model: ContinueModel): string {
  const { email, signedInAs } = model;
  const title = signedInAs === undefined ? `Continue as ${email}?` : `Switch to ${email}?`;
  return page(
    title,
    html`<h1>${title}</h1>
<div class="panel">
${
  signedInAs === undefined
    ? html`<p>A sign-in link for <strong>${email}</strong> was opened in this browser.</p>`
    : html`<p>You are signed in as <strong>${signedInAs}</strong>; switch to <strong>${email}</strong>?</p>`
}
<p>Go on only if you opened the link yourself, from your own node. Until you sign out, whatever you do here (funds,
secrets, webhooks) is done as <strong>${email}</strong>.</p>
<form method="post" action="sign-in">
<input type="hidden" name="form_token" value="${model.formToken}">
${signedInAs === undefined ? null : html`<input type="hidden" name="replace" value="${signedInAs}">`}
<button type="submit">${signedInAs === undefined ? `Continue as ${email}` : `Switch to ${email}`}</button>
</form>
<p><a href="login">${signedInAs === undefined ? 'Not now: back to the wallet' : `Stay signed in as ${signedInAs}`}</a></p>
</div>`,
  );
}

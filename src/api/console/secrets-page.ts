// The console's secrets page: the names and dates of the user's secrets (never a value), a form that sets one and a
// remove button per secret, both only after a recent sign-in (recent-sign-in.ts). Changes go through
// user-secrets/secret-changes.ts, as the API's. A refused value is never shown again: the page asks for it anew.
import { MAX_SECRET_VALUE_BYTES, SECRET_NAME_PATTERN, type SecretSummary } from '../../contract/secrets.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { timeElement } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { recentSignInPanel } from './recent-sign-in.js';

export interface SecretsModel {
  secrets: readonly SecretSummary[];
  /** Until when changes are allowed (ms); undefined: a confirmation first. */
  recentUntil: number | undefined;
  /** Why the last form was refused, and the name as typed. */
  error?: { message: string; name: string };
  notice?: string;
}

export function secretsPage(frame: ConsoleFrame, model: SecretsModel): string {
  const may = model.recentUntil !== undefined;
  return consolePage(
    frame,
    'Secrets',
    html`<h1>Secrets</h1>
<p>A run is handed the secrets its agent declares in <code>agent.json</code>, as environment variables of their names. Values are kept encrypted and never shown again, here or anywhere.</p>
${recentSignInPanel(frame.base, model.recentUntil, 'secrets', 'secrets')}
${model.secrets.length === 0 ? html`<p class="panel">You have no secret.</p>` : secretsTable(frame, model.secrets, may)}
${may ? setForm(frame, model) : null}`,
    { notice: model.notice },
  );
}

function secretsTable(frame: ConsoleFrame, secrets: readonly SecretSummary[], may: boolean): SafeHtml {
  const rows = secrets.map(
    (secret) => html`<tr>
<td><code>${secret.name}</code></td>
<td data-label="Created">${timeElement(secret.created_at)}</td>
<td data-label="Updated">${timeElement(secret.updated_at)}</td>
${may ? html`<td><form method="post" action="${frame.base}secrets/remove"><input type="hidden" name="name" value="${secret.name}"><button type="submit" class="danger">Remove<span class="sr-only"> ${secret.name}</span></button></form></td>` : null}
</tr>`,
  );
  return html`<table>
<caption>Your secrets by name; their values stay at the service.</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Updated</th>${may ? html`<th scope="col"><span class="sr-only">Remove</span></th>` : null}</tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

function setForm(frame: ConsoleFrame, model: SecretsModel): SafeHtml {
  const error = model.error;
  const invalid = error === undefined ? null : html` aria-invalid="true" aria-describedby="secret-error"`;
  return html`<section aria-labelledby="set-heading">
<h2 id="set-heading">Set a secret</h2>
${error === undefined ? null : html`<p class="alert" role="alert" id="secret-error">${error.message} Nothing was changed; type the value again.</p>`}
<form method="post" action="${frame.base}secrets">
<div class="field"><label for="secret-name">Name</label>
<input id="secret-name" name="name" class="long" required maxlength="64" pattern="${SECRET_NAME_PATTERN.slice(1, -1)}" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="OPENAI_API_KEY" aria-describedby="secret-name-help" value="${error?.name ?? ''}"${invalid}>
<p class="muted" id="secret-name-help">Capital letters, digits and _, starting with a letter. A name you have already is given the new value.</p></div>
<div class="field"><label for="secret-value">Value</label>
<textarea id="secret-value" name="value" required maxlength="${MAX_SECRET_VALUE_BYTES}" autocomplete="off" spellcheck="false" aria-describedby="secret-value-help"></textarea>
<p class="muted" id="secret-value-help">4 characters to 16 KiB. It is sent to the service and never shown again.</p></div>
<button type="submit">Set secret</button>
</form>
</section>`;
}

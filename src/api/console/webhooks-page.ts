// The console's webhooks page: the user's endpoints, a form that adds one (its signing secret shown once, as the
// API's 201 shows it) and a remove button per endpoint, both only after a recent sign-in (recent-sign-in.ts).
// Changes go through webhooks/endpoint-changes.ts, as the API's; each endpoint's deliveries are on its own page.
import { MAX_WEBHOOK_URL_CHARS, WEBHOOK_EVENTS, type WebhookEndpoint } from '../../contract/webhooks.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { timeElement } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { recentSignInPanel } from './recent-sign-in.js';

/** The longest description an endpoint takes (WebhookRequest). */
export const MAX_DESCRIPTION_CHARS = 200;

export interface WebhooksModel {
  endpoints: readonly WebhookEndpoint[];
  recentUntil: number | undefined;
  /** The endpoint just added, with its signing secret: shown this once. */
  created?: { endpoint: WebhookEndpoint; signing_secret: string };
  /** Why the last form was refused, and what was typed. */
  error?: { message: string; url: string; description: string; events: readonly string[] };
  notice?: string;
}

export function webhooksPage(frame: ConsoleFrame, model: WebhooksModel): string {
  const may = model.recentUntil !== undefined;
  return consolePage(
    frame,
    'Webhooks',
    html`<h1>Webhooks</h1>
<p>Your endpoints are sent each run's events (queued, started, succeeded, failed, cancelled) and your schedules' (schedule.paused, schedule.resumed, schedule.skipping) as signed HTTPS posts, retried for about 21 hours.</p>
${model.created === undefined ? null : createdPanel(model.created)}
${recentSignInPanel(frame.base, model.recentUntil, 'webhooks', 'webhooks')}
${model.endpoints.length === 0 ? html`<p class="panel">You have no webhook endpoint.</p>` : endpointsTable(frame, model.endpoints, may)}
${may ? addForm(frame, model) : null}`,
    { notice: model.notice },
  );
}

function createdPanel(created: { endpoint: WebhookEndpoint; signing_secret: string }): SafeHtml {
  return html`<section class="panel" aria-labelledby="created-heading">
<h2 id="created-heading">Endpoint added</h2>
<p role="status">Deliveries to <code>${created.endpoint.url}</code> are signed with this secret. Copy it now: it is not shown again.</p>
<pre tabindex="0" aria-label="Signing secret"><code data-testid="signing-secret">${created.signing_secret}</code></pre>
<p class="muted">Check each delivery's <code>Svc-Signature: t=…,v1=…</code>: the HMAC-SHA256 of <code>t.body</code> keyed with this secret.</p>
</section>`;
}

function endpointsTable(frame: ConsoleFrame, endpoints: readonly WebhookEndpoint[], may: boolean): SafeHtml {
  const rows = endpoints.map(
    (endpoint) => html`<tr>
<td><a href="${frame.base}webhooks/${endpoint.endpoint_id}">${endpoint.url}</a>${endpoint.description === null ? null : html`<br><span class="muted">${endpoint.description}</span>`}</td>
<td data-label="Events">${endpoint.events.join(', ')}</td>
<td data-label="Added">${timeElement(endpoint.created_at)}</td>
${may ? html`<td><form method="post" action="${frame.base}webhooks/${endpoint.endpoint_id}/remove"><button type="submit" class="danger">Remove<span class="sr-only"> the endpoint ${endpoint.url}</span></button></form></td>` : null}
</tr>`,
  );
  return html`<table>
<caption>Your endpoints; each one's deliveries are on its page.</caption>
<thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Added</th>${may ? html`<th scope="col"><span class="sr-only">Remove</span></th>` : null}</tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

function addForm(frame: ConsoleFrame, model: WebhooksModel): SafeHtml {
  const error = model.error;
  const chosen = error?.events ?? WEBHOOK_EVENTS;
  const boxes = WEBHOOK_EVENTS.map(
    (event) =>
      html`<label><input type="checkbox" name="events" value="${event}"${chosen.includes(event) ? html` checked` : null}> ${event}</label>`,
  );
  return html`<section aria-labelledby="add-heading">
<h2 id="add-heading">Add an endpoint</h2>
${error === undefined ? null : html`<p class="alert" role="alert" id="webhook-error">${error.message} Nothing was added.</p>`}
<form method="post" action="${frame.base}webhooks">
<div class="field"><label for="webhook-url">HTTPS URL</label>
<input id="webhook-url" name="url" type="url" class="long" required maxlength="${MAX_WEBHOOK_URL_CHARS}" autocomplete="off" spellcheck="false" placeholder="https://example.com/hooks/svc" value="${error?.url ?? ''}"${error === undefined ? null : html` aria-invalid="true" aria-describedby="webhook-error"`}></div>
<fieldset><legend>Events</legend>${boxes}</fieldset>
<div class="field"><label for="webhook-description">Description (optional)</label>
<input id="webhook-description" name="description" class="long" maxlength="${MAX_DESCRIPTION_CHARS}" autocomplete="off" value="${error?.description ?? ''}"></div>
<button type="submit">Add endpoint</button>
</form>
</section>`;
}

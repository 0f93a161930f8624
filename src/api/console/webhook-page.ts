// The console's page of one webhook endpoint: what it takes, and its deliveries with each one's last answer and a
// re-send button (a re-send changes no configuration: no recent sign-in needed, as in the API).
import type { WebhookDelivery, WebhookEndpoint } from '../../contract/webhooks.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { maybeTime, timeElement } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';

export interface WebhookModel {
  endpoint: WebhookEndpoint;
  deliveries: readonly WebhookDelivery[];
  /** The next page's `before`; null on the last page. */
  nextBefore: string | null;
  notice?: string;
}

export function webhookPage(frame: ConsoleFrame, model: WebhookModel): string {
  const { endpoint } = model;
  const path = `${frame.base}webhooks/${endpoint.endpoint_id}`;
  return consolePage(
    frame,
    'Webhook endpoint',
    html`<h1>Webhook endpoint</h1>
<section aria-labelledby="endpoint-heading">
<h2 id="endpoint-heading">Endpoint</h2>
<dl>
<dt>URL</dt><dd><code>${endpoint.url}</code></dd>
<dt>Events</dt><dd>${endpoint.events.join(', ')}</dd>
<dt>Description</dt><dd>${endpoint.description ?? html`<span class="muted">none</span>`}</dd>
<dt>Added</dt><dd>${timeElement(endpoint.created_at)}</dd>
${endpoint.previous_secret_expires_at === null ? null : html`<dt>Previous secret signs until</dt><dd>${timeElement(endpoint.previous_secret_expires_at)}</dd>`}
</dl>
<p><a href="${frame.base}webhooks">All endpoints</a></p>
</section>
<section aria-labelledby="deliveries-heading">
<h2 id="deliveries-heading">Deliveries</h2>
${model.deliveries.length === 0 ? html`<p class="muted">None yet: a delivery is made for each event of your runs that this endpoint takes.</p>` : deliveriesTable(frame, path, model.deliveries)}
${model.nextBefore === null ? null : html`<p><a href="${path}?before=${model.nextBefore}" rel="next">Older deliveries</a></p>`}
</section>`,
    { notice: model.notice },
  );
}

/** The run a delivery is of, linked; or the schedule, on the schedules page. */
function subjectOf(frame: ConsoleFrame, delivery: WebhookDelivery): SafeHtml {
  if (delivery.run_id !== null)
    return html`<a href="${frame.base}runs/${encodeURIComponent(delivery.run_id)}"><code>…${delivery.run_id.slice(-8)}</code><span class="sr-only">, run ${delivery.run_id}</span></a>`;
  const id = delivery.schedule_id ?? '';
  return html`<a href="${frame.base}schedules"><code>…${id.slice(-8)}</code><span class="sr-only">, schedule ${id}</span></a>`;
}

function deliveriesTable(frame: ConsoleFrame, path: string, deliveries: readonly WebhookDelivery[]): SafeHtml {
  const rows = deliveries.map(
    (delivery) => html`<tr>
<td><code>${delivery.event_type}</code><br>${timeElement(delivery.created_at)}</td>
<td data-label="Of">${subjectOf(frame, delivery)}</td>
<td data-label="Status"><span class="status-${delivery.status === 'failed' ? 'failed' : delivery.status}">${delivery.status}</span></td>
<td class="num" data-label="Attempts">${delivery.attempts}</td>
<td data-label="Last answer">${lastAnswer(delivery)}</td>
<td data-label="Next attempt">${delivery.status === 'pending' ? maybeTime(delivery.next_attempt_at, 'none') : html`<span class="muted">—</span>`}</td>
<td><form method="post" action="${path}/deliveries/${delivery.event_id}/resend"><button type="submit" class="secondary">Re-send<span class="sr-only"> the ${delivery.event_type} event of ${delivery.created_at}</span></button></form></td>
</tr>`,
  );
  return html`<table>
<caption>Newest first. A delivery is tried 8 times over about 21 hours; a re-send starts a new series now.</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Run</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last answer</th><th scope="col">Next attempt</th><th scope="col"><span class="sr-only">Re-send</span></th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

function lastAnswer(delivery: WebhookDelivery): SafeHtml {
  if (delivery.last_attempt_at === null) return html`<span class="muted">not tried yet</span>`;
  const what = delivery.last_status_code !== null ? `HTTP ${delivery.last_status_code}` : (delivery.last_error ?? 'no answer');
  return html`${what}<br>${timeElement(delivery.last_attempt_at)}`;
}

// The console's page of one run: its status, charge and refund, its times, queue wait and duration, a failed run's
// reason, its attempts, its input, its output for a person (run-output-view.ts), its log (followed live while it runs,
// follow-log-script.ts), its artifacts with download links, a cancel button while it can be cancelled, and a re-run
// button once it ended (a new billed run of the same input, after a page naming its price: rerun-page.ts).
import { findAgentSku } from '../../contract/agents.js';
import type { ArtifactView, LogEntry, RunAttempt } from '../../contract/jobs.js';
import type { RunEventServed } from '../../contract/run-events.js';
import { formatDollars } from '../../contract/money.js';
import type { RunResponse } from '../../contract/schemas.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { FOLLOW_LOG_SCRIPT } from './follow-log-script.js';
import { durationBetween, formatBytes, maybeTime, timeElement, triggerText } from './format.js';
import { failureOf, inputSection, outputSection } from './run-output-view.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { nodeName, type NodeName } from './runs-page.js';

export interface RunPageModel {
  run: RunResponse;
  attempts: readonly RunAttempt[];
  nodes: readonly NodeName[];
  log: {
    entries: readonly LogEntry[];
    /** The page shows the first entries; the follow brings the rest. */
    more: boolean;
    truncated: boolean;
    expired: boolean;
  };
  /** Its structured events (docs/api.md "Run events"): the first ones; the follow brings the rest. */
  events: { entries: readonly RunEventServed[]; more: boolean; truncated: boolean };
  artifacts: readonly ArtifactView[];
  artifactsExpireAt: string | null;
  /** When a node took it (the current attempt's start); null while it waits. */
  claimedAt: string | null;
  /** The input it was sent, its secrets' values hidden (routes/wallet/runs.ts); null: none. */
  input: unknown;
  /** What came back to the wallet for it (the ledger's refund); null: nothing. */
  refund: { amount_cents: number; at: string } | null;
  /** A queued run pinned to a node its user drained (docs/api.md "Draining a node"): it waits for the resume. */
  waitingForNode: { node_id: string; drained_at: string } | null;
  /** Why the last action on it was refused. */
  alert?: string;
}

/** Whether the page follows the log (and so runs its one script): a run not ended, or a log longer than the page. */
export function followsLog(model: Pick<RunPageModel, 'run' | 'log'>): boolean {
  return (model.run.finished_at === null || model.log.more) && !model.log.expired;
}

/** Whether the page follows the run's events: a run not ended, or more events than the page shows. */
export function followsEvents(model: Pick<RunPageModel, 'run' | 'events'>): boolean {
  return model.run.finished_at === null || model.events.more;
}

/** Whether the page runs its follower (follow-log-script.ts), for its log, its events or both. */
export function follows(model: Pick<RunPageModel, 'run' | 'log' | 'events'>): boolean {
  return followsLog(model) || followsEvents(model);
}

/** An event as a line, as `swarm-node logs --events` prints it: its type (and name), then its data as JSON. */
export function eventLine(event: Pick<RunEventServed, 'type' | 'name' | 'data'>): string {
  return `[${event.name === null ? event.type : `${event.type}:${event.name}`}] ${JSON.stringify(event.data)}`;
}

export function runPage(frame: ConsoleFrame, model: RunPageModel): string {
  const { run } = model;
  const finished = run.finished_at !== null;
  const follows = followsLog(model);
  const runPath = `${frame.base}runs/${encodeURIComponent(run.run_id)}`;
  const agentName = findAgentSku(run.agent_id)?.name ?? run.agent_id;
  const failure = failureOf(run);
  return consolePage(
    frame,
    `Run of ${agentName}`,
    html`<h1>Run of ${agentName}</h1>
<section aria-labelledby="summary-heading">
<h2 id="summary-heading">Summary</h2>
<dl>
<dt>Status</dt><dd><span id="run-status" class="status-${run.status}">${run.status}</span></dd>
<dt>Run id</dt><dd><code>${run.run_id}</code></dd>
<dt>Agent</dt><dd><code>${run.agent_id}</code></dd>
${failure === null ? null : html`<dt>Reason</dt><dd id="run-reason"><code>${failure.error}</code>${failure.message === '' ? null : html`: ${failure.message}`}</dd>`}
<dt>Charge</dt><dd>${formatDollars(run.charged_cents)}${model.refund === null ? null : html` <span id="run-refund">(refunded ${formatDollars(model.refund.amount_cents)} to your wallet ${timeElement(model.refund.at)})</span>`}</dd>
<dt>Node</dt><dd>${run.node_id === null ? html`<span class="muted">none yet</span>` : nodeName(run.node_id, model.nodes)}</dd>
${
  model.waitingForNode === null
    ? null
    : html`<dt>Waiting for</dt><dd id="run-waiting">${nodeName(model.waitingForNode.node_id, model.nodes)}, drained since ${timeElement(model.waitingForNode.drained_at)}: this run is pinned to it and waits until it is resumed (<a href="${frame.base}nodes">Nodes</a>)</dd>`
}
<dt>Created</dt><dd>${timeElement(run.started_at)}</dd>
<dt>Trigger</dt><dd id="run-trigger">${triggerText(run.trigger)}</dd>
<dt>Queue wait</dt><dd>${durationBetween(run.started_at, model.claimedAt ?? run.finished_at, 'still waiting')}</dd>
<dt>Duration</dt><dd>${model.claimedAt === null ? html`<span class="muted">never ran on a node</span>` : durationBetween(model.claimedAt, run.finished_at, 'still running')}</dd>
<dt>Finished</dt><dd>${maybeTime(run.finished_at, 'not finished')}</dd>
${run.timeout_seconds === undefined ? null : html`<dt>Time limit</dt><dd>${run.timeout_seconds} s</dd>`}
${run.cancel_requested_at === null || run.cancel_requested_at === undefined ? null : html`<dt>Cancel asked</dt><dd>${timeElement(run.cancel_requested_at)}</dd>`}
</dl>
${
  finished
    ? html`<form method="get" action="${runPath}/rerun"><button type="submit" class="secondary">Run again with the same input</button></form>`
    : html`<form method="post" action="${runPath}/cancel"><button type="submit" class="danger">Cancel this run</button></form>`
}
</section>
${model.attempts.length > 0 ? attemptsTable(model.attempts, model.nodes) : null}
${inputSection(model.input)}
<section aria-labelledby="log-heading">
<h2 id="log-heading">Log</h2>
${logStatus(model, follows)}
${
  model.log.expired
    ? null
    : html`<div id="log" class="log" role="log" aria-labelledby="log-heading" tabindex="0"${follows ? html` data-follow="${runPath}/log-events?after=${model.log.entries.at(-1)?.seq ?? -1}"` : null}>
${model.log.entries.length === 0 ? html`<div id="log-empty" class="muted">No line yet.</div>` : null}${model.log.entries.map((entry) => html`<div class="${entry.stream}">${entry.text}</div>`)}
</div>`
}
</section>
${eventsSection(model, runPath)}
${outputSection(run)}
${artifactsSection(model, runPath)}`,
    { ...(followsLog(model) || followsEvents(model) ? { script: FOLLOW_LOG_SCRIPT } : {}), alert: model.alert },
  );
}

function eventsSection(model: RunPageModel, runPath: string): SafeHtml {
  const live = followsEvents(model);
  const { entries } = model.events;
  const cap = model.events.truncated ? ' They reached their cap; the rest was not kept.' : '';
  return html`<section aria-labelledby="events-heading">
<h2 id="events-heading">Events</h2>
<p id="events-status" class="muted">${live ? 'The events so far (this page follows them live where its script may run).' : 'Every event of the run.'}${cap}</p>
<div id="events" class="log" role="log" aria-labelledby="events-heading" tabindex="0"${live ? html` data-follow="${runPath}/run-events?after=${entries.at(-1)?.seq ?? -1}"` : null}>
${entries.length === 0 ? html`<div id="events-empty" class="muted">${model.run.finished_at === null ? 'None yet.' : 'This run emitted no event.'} An agent on the kit emits them (<code>kit.progress</code>, <code>kit.event</code>).</div>` : null}${entries.map((event) => html`<div>${eventLine(event)}</div>`)}
</div>
</section>`;
}

function logStatus(model: RunPageModel, follows: boolean): SafeHtml {
  if (model.log.expired) return html`<p class="muted">This run's log expired (logs are kept 30 days after a run ends).</p>`;
  const cap = model.log.truncated ? ' It reached its cap of 4 MiB; the rest was not kept.' : '';
  if (!follows) return html`<p id="log-status" role="status" class="muted">The whole log.${cap}</p>`;
  return html`<p id="log-status" role="status" class="muted">The log so far. Reload the page for new lines (this page follows them live where its script may run).${cap}</p>`;
}

function attemptsTable(attempts: readonly RunAttempt[], nodes: readonly NodeName[]): SafeHtml {
  const rows = attempts.map(
    (attempt) => html`<tr>
<td class="num">${attempt.attempt}</td>
<td data-label="Node">${attempt.node_id === null ? '—' : nodeName(attempt.node_id, nodes)}</td>
<td data-label="Started">${maybeTime(attempt.started_at, 'not started')}</td>
<td data-label="Ended">${maybeTime(attempt.ended_at, 'not ended')}</td>
<td data-label="Outcome">${attempt.outcome ?? 'running'}${attempt.message === undefined || attempt.message === null ? null : html`<br><span class="muted">${attempt.message}</span>`}</td>
</tr>`,
  );
  return html`<section aria-labelledby="attempts-heading">
<h2 id="attempts-heading">Attempts</h2>
<table>
<caption>Each time a node took the run. A run whose node was lost runs again when its agent is retry-safe, charged once.</caption>
<thead><tr><th scope="col" class="num">Attempt</th><th scope="col">Node</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col">Outcome</th></tr></thead>
<tbody>${rows}</tbody>
</table>
</section>`;
}

function artifactsSection(model: RunPageModel, runPath: string): SafeHtml {
  // Said only of files there are: "None … they are kept until" spoke of nothing.
  const expiry = model.artifactsExpireAt === null ? null : html` They are kept until ${timeElement(model.artifactsExpireAt)}.`;
  const rows = model.artifacts.map(
    (artifact) => html`<tr>
<td><a href="${runPath}/artifacts/${encodeURIComponent(artifact.name)}" download="${artifact.name}">${artifact.name}</a></td>
<td class="num" data-label="Size">${formatBytes(artifact.size_bytes)}</td>
<td data-label="Type">${artifact.content_type}</td>
<td data-label="SHA-256"><code title="${artifact.sha256}">${artifact.sha256.slice(0, 12)}</code></td>
<td data-label="Uploaded">${timeElement(artifact.created_at)}</td>
</tr>`,
  );
  return html`<section aria-labelledby="artifacts-heading">
<h2 id="artifacts-heading">Artifacts</h2>
${
  model.artifacts.length === 0
    ? html`<p class="muted">${model.run.finished_at === null ? 'None yet.' : 'This run left no file.'} An agent leaves files for you in <code>SWARM_ARTIFACTS_DIR</code>.</p>`
    : html`<table>
<caption>${model.artifacts.length} file${model.artifacts.length === 1 ? '' : 's'}.${expiry}</caption>
<thead><tr><th scope="col">Name</th><th scope="col" class="num">Size</th><th scope="col">Type</th><th scope="col">SHA-256</th><th scope="col">Uploaded</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}
</section>`;
}

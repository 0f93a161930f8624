// The console's runs page: the run history of GET /v1/swarm/runs (runs/run-history.ts) with its filters as a form
// (a search, agent, status, node, a range of UTC days), a page at a time, each run with its queue wait and duration
// and a link to its own page; while a run on it is queued or running, it refreshes itself (auto-refresh-script.ts).
import { AGENT_SKUS, findAgentSku } from '../../contract/agents.js';
import type { RunSummary } from '../../contract/jobs.js';
import type { NodeSummary } from '../../contract/node-protocol.js';
import { RUN_STATUSES } from '../../contract/schemas.js';
import { formatDollars } from '../../contract/money.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { AUTO_REFRESH_SCRIPT, AUTO_REFRESH_SECONDS } from './auto-refresh-script.js';
import { durationBetween, statusText, timeElement, triggerText } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';

export interface RunFilter {
  q?: string;
  agent_id?: string;
  status?: string;
  node_id?: string;
  /** UTC days (YYYY-MM-DD) as the form's date inputs send them, both included; or ISO times in a URL. */
  since?: string;
  until?: string;
}

export interface RunsModel {
  runs: readonly RunSummary[];
  /** The next page's cursor; null on the last page. */
  next_cursor: string | null;
  filter: RunFilter;
  nodes: readonly NodeName[];
  /** Why the filter was refused (the page is then a 400 with no runs). */
  error?: string;
  /** false: the person turned the refresh off (?refresh=off). */
  refresh?: boolean;
}

/** Whether the page refreshes itself, and so carries its script: a run on it waits or runs. */
export function refreshesRuns(model: Pick<RunsModel, 'runs' | 'refresh'>): boolean {
  return model.refresh !== false && model.runs.some((run) => run.status === 'queued' || run.status === 'running');
}

export function runsPage(frame: ConsoleFrame, model: RunsModel): string {
  const filtered = Object.values(model.filter).some((value) => value !== undefined);
  // The next page keeps the filters: those chosen, and no other.
  const chosen = Object.entries(model.filter).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const refreshes = refreshesRuns(model);
  const refreshNote = refreshes
    ? html`<p id="auto-refresh" class="muted" data-refresh-seconds="${AUTO_REFRESH_SECONDS}">Runs are in flight: this page refreshes every ${AUTO_REFRESH_SECONDS} s until they end. <a href="${frame.base}runs?${new URLSearchParams([...chosen, ['refresh', 'off']]).toString()}">Stop refreshing</a></p>`
    : null;
  const older =
    model.next_cursor === null
      ? null
      : html`<p><a href="${frame.base}runs?${new URLSearchParams([...chosen, ['cursor', model.next_cursor]]).toString()}" rel="next">Older runs</a></p>`;
  const results =
    model.error !== undefined
      ? null
      : model.runs.length === 0
        ? html`<p class="panel">${filtered ? 'No run matches these filters.' : html`No runs yet. Start one with <code>swarm-node run &lt;agent_id&gt;</code>.`}</p>`
        : html`${refreshNote}${runsTable(frame, model.runs, model.nodes)}${older}`;
  return consolePage(
    frame,
    'Runs',
    html`<h1>Runs</h1>
${filterForm(frame, model)}
${results}`,
    refreshes ? { script: AUTO_REFRESH_SCRIPT } : {},
  );
}

function filterForm(frame: ConsoleFrame, model: RunsModel): SafeHtml {
  const { filter } = model;
  const agents = [...new Set([...AGENT_SKUS.map((sku) => sku.agent_id), ...(filter.agent_id === undefined ? [] : [filter.agent_id])])];
  const option = (value: string, label: string, selected: string | undefined) =>
    html`<option value="${value}"${value === (selected ?? '') ? html` selected` : null}>${label}</option>`;
  return html`<section aria-labelledby="filter-heading">
<h2 id="filter-heading">Filter</h2>
${model.error === undefined ? null : html`<p class="alert" role="alert" id="filter-error">${model.error}</p>`}
<form method="get" action="${frame.base}runs" class="fields">
<div class="field"><label for="filter-q">Search</label>
<input id="filter-q" name="q" type="search" maxlength="128" value="${filter.q ?? ''}" placeholder="run id, agent, status" aria-describedby="filter-q-help">
<span id="filter-q-help" class="sr-only">A run id opens that run; a status or an agent's id or name filters by it.</span></div>
<div class="field"><label for="filter-agent">Agent</label>
<select id="filter-agent" name="agent_id">${option('', 'Any agent', filter.agent_id)}${agents.map((agent) => option(agent, findAgentSku(agent)?.name ?? agent, filter.agent_id))}</select></div>
<div class="field"><label for="filter-status">Status</label>
<select id="filter-status" name="status">${option('', 'Any status', filter.status)}${RUN_STATUSES.map((status) => option(status, status, filter.status))}</select></div>
<div class="field"><label for="filter-node">Node</label>
<select id="filter-node" name="node_id">${option('', 'Any node', filter.node_id)}${model.nodes.map((node) => option(node.node_id, node.name ?? node.hostname ?? node.node_id, filter.node_id))}</select></div>
<div class="field"><label for="filter-since">From (UTC day)</label><input id="filter-since" name="since" type="date" value="${dayOf(filter.since)}"></div>
<div class="field"><label for="filter-until">To (UTC day)</label><input id="filter-until" name="until" type="date" value="${dayOf(filter.until)}"></div>
<div class="field"><button type="submit">Show runs</button></div>
</form>
</section>`;
}

/** A date input shows a day only: an ISO time from a URL shows as its day. */
function dayOf(value: string | undefined): string {
  return value !== undefined && /^\d{4}-\d{2}-\d{2}/.test(value) ? value.slice(0, 10) : '';
}

function runsTable(frame: ConsoleFrame, runs: readonly RunSummary[], nodes: readonly NodeName[]): SafeHtml {
  const rows = runs.map(
    (run) => html`<tr>
<td><a href="${frame.base}runs/${encodeURIComponent(run.run_id)}">${findAgentSku(run.agent_id)?.name ?? run.agent_id}</a><br><code class="muted">${run.run_id}</code></td>
<td data-label="Status">${statusText(run.status)}${run.error === null ? null : html`<br><span class="muted">${run.error.error}</span>`}</td>
<td class="num" data-label="Charge">${formatDollars(run.charged_cents)}</td>
<td data-label="Created">${timeElement(run.started_at)}</td>
<td class="num" data-label="Queue wait">${durationBetween(run.started_at, run.claimed_at ?? run.finished_at, 'still waiting')}</td>
<td class="num" data-label="Duration">${run.claimed_at === null ? html`<span aria-label="never ran">—</span>` : durationBetween(run.claimed_at, run.finished_at, 'still running')}</td>
<td data-label="Node">${run.node_id === null ? html`<span class="muted">none</span>` : nodeName(run.node_id, nodes)}</td>
<td data-label="Trigger">${triggerText(run.trigger)}</td>
</tr>`,
  );
  return html`<table>
<caption>${runs.length} run${runs.length === 1 ? '' : 's'}, newest first. Queue wait: from its creation until a node took it; duration: on its node; trigger: what started it. A failed or cancelled run is refunded.</caption>
<thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col" class="num">Charge</th><th scope="col">Created</th><th scope="col" class="num">Queue wait</th><th scope="col" class="num">Duration</th><th scope="col">Node</th><th scope="col">Trigger</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

/** What names a node to people. */
export type NodeName = Pick<NodeSummary, 'node_id' | 'name' | 'hostname'>;

/** A node as people call it: its name or host, else the start of its id (a node removed since is not in the fleet). */
export function nodeName(nodeId: string, nodes: readonly NodeName[]): SafeHtml {
  const node = nodes.find((each) => each.node_id === nodeId);
  const name = node?.name ?? node?.hostname;
  return name === undefined || name === null ? html`<code>${nodeId.slice(0, 8)}</code>` : html`${name}`;
}

// The console's nodes page: the user's fleet as GET /v1/swarm/nodes shows it (nodes/fleet-view.ts), each node's
// health (node-health-cell.ts), and its actions: drain or resume (docs/api.md "Draining a node"), remove.
import type { NodeSummary } from '../../contract/node-protocol.js';
import { compareVersions } from '../../lib/release-manifest.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { maybeTime, timeElement } from './format.js';
import { healthCell } from './node-health-cell.js';
import { consolePage, type ConsoleFrame } from './layout.js';

function versionNote(version: string | null, newest: string | undefined): SafeHtml | null {
  if (version === null || newest === undefined) return null;
  if (compareVersions(version, newest) >= 0) return html`<br><span class="muted">newest</span>`;
  return html`<br><strong>update: ${newest}</strong> <span class="muted">(swarm-node upgrade)</span>`;
}

export interface RunInProgress {
  run_id: string;
  agent_id: string;
  node_id: string;
  /** When the node took it (ms). */
  since: number;
}

/** A drained node's Resume, any other's Drain: a form each, posted as the removal's is (same origin only). */
function drainForm(frame: ConsoleFrame, node: NodeSummary, named: string): SafeHtml {
  const drained = node.drained_at !== undefined && node.drained_at !== null;
  const action = drained ? 'resume' : 'drain';
  return html`<form method="post" action="${frame.base}nodes/${node.node_id}/${action}"><button type="submit" class="secondary" aria-label="${drained ? 'Resume' : 'Drain'} ${named} (${node.node_id})">${drained ? 'Resume' : 'Drain'}</button></form>`;
}

/**
 * `newest`: the newest release the service publishes (undefined: it publishes none), each node's version set against
 * it. `now`: what each health's age is counted from.
 */
export function nodesPage(
  frame: ConsoleFrame,
  nodes: readonly NodeSummary[],
  running: readonly RunInProgress[] = [],
  newest?: string,
  now: number = Date.now(),
): string {
  const runningOn = (nodeId: string) => running.filter((run) => run.node_id === nodeId);
  const rows = nodes.map((node) => {
    const named = node.name ?? node.hostname ?? 'unnamed node';
    const drained = node.drained_at !== undefined && node.drained_at !== null;
    return html`<tr>
<td><a href="${frame.base}runs?node_id=${node.node_id}">${named}</a>${node.ephemeral ? html` <span class="muted">(ephemeral)</span>` : null}<br><code class="muted">${node.node_id}</code></td>
<td data-label="State">${node.online ? html`<span class="status-online">online</span>` : html`<span>offline</span>`}${
      drained
        ? html`<br><strong>drained</strong> <span class="muted">since ${timeElement(node.drained_at!)}: takes no new run</span>`
        : null
    }</td>
<td data-label="Health">${healthCell(node, now)}</td>
<td data-label="Labels">${node.labels.length === 0 ? html`<span class="muted">none</span>` : node.labels.join(', ')}</td>
<td data-label="Agents">${node.agents.length === 0 ? html`<span class="muted">none</span>` : node.agents.join(', ')}</td>
<td data-label="Version">${node.version ?? '—'}${versionNote(node.version, newest)}</td>
<td data-label="Last seen">${maybeTime(node.last_seen_at)}</td>
<td data-label="Running now">${
      runningOn(node.node_id).length === 0
        ? html`<span class="muted">idle</span>`
        : runningOn(node.node_id).map(
            (run) =>
              html`<a href="${frame.base}runs/${run.run_id}">${run.agent_id}</a> <span class="muted">since ${timeElement(run.since)}</span><br>`,
          )
    }</td>
<td class="num" data-label="Runs today">${node.runs_today}</td>
<td data-label="Actions">${drainForm(frame, node, named)}<a href="${frame.base}nodes/${node.node_id}/remove" aria-label="Remove ${named} (${node.node_id})">Remove…</a></td>
</tr>`;
  });
  const body =
    nodes.length === 0
      ? html`<p class="panel">You have no node yet. On the host that should run your agents, sign in and enrol it: <code>swarm-node login --email ${frame.email} &amp;&amp; swarm-node enroll</code>.</p>`
      : html`<table>
<caption>${nodes.length} node${nodes.length === 1 ? '' : 's'}. A node is online while it polls, and says how its host is; a drained one takes no new run. Its runs are listed under its name.</caption>
<thead><tr><th scope="col">Node</th><th scope="col">State</th><th scope="col">Health</th><th scope="col">Labels</th><th scope="col">Agents</th><th scope="col">Version</th><th scope="col">Last seen</th><th scope="col">Running now</th><th scope="col" class="num">Runs today</th><th scope="col">Actions</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
  return consolePage(
    frame,
    'Nodes',
    html`<h1>Nodes</h1>
${body}`,
  );
}

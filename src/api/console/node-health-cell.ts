// How the console's nodes page shows a node's health (docs/api.md "Node health"): the load averages, the memory in use,
// the free disk of its home, its host's uptime and how long ago the node said them; marked stale while the node is
// offline (what it said is then its last word, not how the host is now), and "not reported" for a node that never
// said it (an older daemon).
import type { NodeSummary } from '../../contract/node-protocol.js';
import { formatSize, formatSpan, loadText, memoryUsedPercent } from '../../lib/host-figures.js';
import { html, type SafeHtml } from '../wallet-page/html.js';

export function healthCell(node: NodeSummary, now: number): SafeHtml {
  const health = node.health;
  if (health === undefined || health === null) return html`<span class="muted">not reported</span>`;
  const disk =
    health.disk_free_bytes === undefined || health.disk_total_bytes === undefined
      ? html`disk <span class="muted">not reported</span>`
      : html`disk ${formatSize(health.disk_free_bytes)} free of ${formatSize(health.disk_total_bytes)}`;
  const ago = formatSpan((now - Date.parse(health.reported_at)) / 1000);
  const when = node.online
    ? html`<span class="muted">reported ${ago} ago</span>`
    : html`<strong>stale</strong> <span class="muted">(offline): reported ${ago} ago</span>`;
  return html`<span title="load averages over 1, 5 and 15 minutes">load ${loadText(health)}</span><br>memory ${memoryUsedPercent(health)}% used of ${formatSize(health.memory_total_bytes)}<br>${disk}<br>up ${formatSpan(health.uptime_seconds)}<br>${when}`;
}

// The console's usage page: GET /v1/swarm/usage (usage/usage-report.ts) for a range of days, as two charts (spend per
// day and per agent, usage-chart.ts) and the tables with the same figures, which a screen reader can walk.
import { findAgentSku } from '../../contract/agents.js';
import { formatDollars } from '../../contract/money.js';
import type { UsageFigures, UsageResponse } from '../../contract/usage.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { agentChart, dailyChart } from './usage-chart.js';

export interface UsageModel {
  /** The range as asked (shown again in the form). */
  from: string;
  to: string;
  /** null when the range was refused. */
  usage: UsageResponse | null;
  error?: string;
}

export function usagePage(frame: ConsoleFrame, model: UsageModel): string {
  const { usage } = model;
  return consolePage(
    frame,
    'Usage',
    html`<h1>Usage</h1>
<section aria-labelledby="range-heading">
<h2 id="range-heading">Range</h2>
${model.error === undefined ? null : html`<p class="alert" role="alert" id="range-error">${model.error}</p>`}
<form method="get" action="${frame.base}usage" class="fields">
<div class="field"><label for="usage-from">From (UTC day)</label><input id="usage-from" name="from" type="date" value="${model.from}" required${invalid(model)}></div>
<div class="field"><label for="usage-to">To, included</label><input id="usage-to" name="to" type="date" value="${model.to}" required${invalid(model)}></div>
<div class="field"><button type="submit">Show usage</button></div>
</form>
</section>
${usage === null ? null : report(usage)}`,
  );
}

function invalid(model: UsageModel): SafeHtml | null {
  return model.error === undefined ? null : html` aria-invalid="true" aria-describedby="range-error"`;
}

function report(usage: UsageResponse): SafeHtml {
  const agents = [...usage.by_agent].sort((a, b) => b.net_cents - a.net_cents);
  return html`<section aria-labelledby="totals-heading">
<h2 id="totals-heading">From ${usage.from} to ${usage.to}</h2>
<p><span class="balance" data-testid="usage-net">${formatDollars(usage.totals.net_cents)}</span> spent: ${usage.totals.runs} run${usage.totals.runs === 1 ? '' : 's'} charged ${formatDollars(usage.totals.charged_cents)}, ${formatDollars(usage.totals.refunded_cents)} of it refunded.</p>
</section>
<section aria-labelledby="per-day-heading">
<h2 id="per-day-heading">Spend per day</h2>
${dailyChart(
  'chart-day',
  `Net spend per day, ${usage.from} to ${usage.to}`,
  usage.days.map((day) => ({ label: day.date, cents: day.net_cents })),
)}
${figuresTable(
  'Day',
  'Each day with runs, what they cost net of refunds (days without runs are left out).',
  usage.days.filter((day) => day.runs > 0).map((day) => [day.date, day]),
)}
</section>
<section aria-labelledby="per-agent-heading">
<h2 id="per-agent-heading">Spend per agent</h2>
${
  agents.length === 0
    ? html`<p class="muted">No runs in this range.</p>`
    : html`${agentChart(
        'chart-agent',
        `Net spend per agent, ${usage.from} to ${usage.to}`,
        agents.map((agent) => ({ label: agentName(agent.agent_id), cents: agent.net_cents })),
      )}
${figuresTable(
  'Agent',
  'Each agent, what its runs cost net of refunds, most first.',
  agents.map((agent) => [agentName(agent.agent_id), agent]),
)}`
}
</section>`;
}

function agentName(agentId: string): string {
  return findAgentSku(agentId)?.name ?? agentId;
}

function figuresTable(what: string, caption: string, rows: ReadonlyArray<readonly [string, UsageFigures]>): SafeHtml {
  if (rows.length === 0) return html`<p class="muted">No runs in this range.</p>`;
  return html`<table>
<caption>${caption}</caption>
<thead><tr><th scope="col">${what}</th><th scope="col" class="num">Runs</th><th scope="col" class="num">Charged</th><th scope="col" class="num">Refunded</th><th scope="col" class="num">Net</th></tr></thead>
<tbody>${rows.map(
    ([label, figures]) =>
      html`<tr><th scope="row">${label}</th><td class="num" data-label="Runs">${figures.runs}</td><td class="num" data-label="Charged">${formatDollars(figures.charged_cents)}</td><td class="num" data-label="Refunded">${formatDollars(figures.refunded_cents)}</td><td class="num" data-label="Net">${formatDollars(figures.net_cents)}</td></tr>`,
  )}</tbody>
</table>`;
}

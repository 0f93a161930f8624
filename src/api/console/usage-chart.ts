// The usage page's charts as inline SVG rendered here (no script, no image request): bars of what was spent per
// day and per agent. Each chart is one image to a screen reader (role="img", its title and a description that says
// the total and the highest bar); the page puts the same figures in tables beside it. Sizes and places are SVG
// presentation attributes, colours the stylesheet's classes: the page's policy allows no inline style.
import { formatDollars } from '../../contract/money.js';
import { html, type SafeHtml } from '../wallet-page/html.js';

const WIDTH = 720;
const DAY_CHART_HEIGHT = 200;
const MARGIN = { top: 12, right: 8, bottom: 24, left: 56 };
const AGENT_ROW = 28;
const AGENT_LABEL_WIDTH = 200;
const AGENT_VALUE_WIDTH = 72;

export interface Bar {
  label: string;
  cents: number;
}

/** Vertical bars, one a day, the y axis in dollars from 0 to the highest day. */
export function dailyChart(id: string, title: string, days: readonly Bar[]): SafeHtml {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = DAY_CHART_HEIGHT - MARGIN.top - MARGIN.bottom;
  const highest = Math.max(1, ...days.map((day) => day.cents));
  const slot = plotWidth / Math.max(1, days.length);
  const barWidth = Math.max(1, slot * 0.8);
  const y = (cents: number) => MARGIN.top + plotHeight - (Math.max(0, cents) / highest) * plotHeight;
  const bars = days.map((day, index) => {
    const top = y(day.cents);
    return html`<rect class="bar" x="${fixed(MARGIN.left + index * slot + (slot - barWidth) / 2)}" y="${fixed(top)}" width="${fixed(barWidth)}" height="${fixed(MARGIN.top + plotHeight - top)}"><title>${day.label}: ${formatDollars(day.cents)}</title></rect>`;
  });
  const ticks = [0, highest / 2, highest].map(
    (cents) => html`<text x="${MARGIN.left - 6}" y="${fixed(y(cents) + 4)}" text-anchor="end">${formatDollars(Math.round(cents))}</text>`,
  );
  const labelled = days.length === 0 ? [] : [...new Set([0, Math.floor((days.length - 1) / 2), days.length - 1])];
  // The first and last labels are anchored inside the chart, so neither is cut at its edge.
  const anchorOf = (index: number) => (index === 0 ? 'start' : index === days.length - 1 ? 'end' : 'middle');
  const xOf = (index: number) =>
    index === 0 ? MARGIN.left : index === days.length - 1 ? WIDTH - MARGIN.right : MARGIN.left + index * slot + slot / 2;
  const dates = labelled.map(
    (index) =>
      html`<text x="${fixed(xOf(index))}" y="${DAY_CHART_HEIGHT - 6}" text-anchor="${anchorOf(index)}">${days[index]!.label}</text>`,
  );
  const baseline = MARGIN.top + plotHeight;
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${DAY_CHART_HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" focusable="false">
<title id="${id}-title">${title}</title>
<desc id="${id}-desc">${describe(days, 'day')}</desc>
<line class="axis" x1="${MARGIN.left}" y1="${baseline}" x2="${WIDTH - MARGIN.right}" y2="${baseline}"/>
${ticks}${bars}${dates}
</svg>`;
}

/** Horizontal bars, one an agent, longest first. */
export function agentChart(id: string, title: string, agents: readonly Bar[]): SafeHtml {
  const height = Math.max(1, agents.length) * AGENT_ROW + 8;
  const plotWidth = WIDTH - AGENT_LABEL_WIDTH - AGENT_VALUE_WIDTH;
  const highest = Math.max(1, ...agents.map((agent) => agent.cents));
  const rows = agents.map((agent, index) => {
    const top = 4 + index * AGENT_ROW;
    const width = Math.max(agent.cents > 0 ? 1 : 0, (Math.max(0, agent.cents) / highest) * plotWidth);
    return html`<text x="${AGENT_LABEL_WIDTH - 8}" y="${top + 17}" text-anchor="end">${agent.label}</text>
<rect class="bar" x="${AGENT_LABEL_WIDTH}" y="${top + 4}" width="${fixed(width)}" height="${AGENT_ROW - 8}"><title>${agent.label}: ${formatDollars(agent.cents)}</title></rect>
<text x="${fixed(AGENT_LABEL_WIDTH + width + 6)}" y="${top + 17}">${formatDollars(agent.cents)}</text>`;
  });
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-labelledby="${id}-title ${id}-desc" focusable="false">
<title id="${id}-title">${title}</title>
<desc id="${id}-desc">${describe(agents, 'agent')}</desc>
${rows}
</svg>`;
}

function describe(bars: readonly Bar[], each: string): string {
  if (bars.length === 0) return `No ${each} to show.`;
  const total = bars.reduce((sum, bar) => sum + bar.cents, 0);
  const highest = bars.reduce((best, bar) => (bar.cents > best.cents ? bar : best), bars[0]!);
  return total === 0
    ? `Nothing spent in these ${bars.length} ${each}s.`
    : `${formatDollars(total)} in all over ${bars.length} ${each}s; the most, ${formatDollars(highest.cents)}, on ${highest.label}.`;
}

function fixed(value: number): string {
  return value.toFixed(1);
}

// The console's schedules page (docs/api.md "Console", "Schedules"): each schedule with its next runs in the
// schedule's own time zone and in the browser's (the frame's script rewrites each <time>), its state and pause reason,
// and its last coalesced skips. Changes are made with the API or swarm-node schedule, which need the recent sign-in.
import { formatDollars } from '../../contract/money.js';
import type { ScheduleDetail } from '../../contract/schedules.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { timeElement } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';

/** `iso` in `zone`, as the schedule's own clock shows it: 2027-03-28 03:00 CEST. */
function inZone(iso: string, zone: string): string {
  // en-GB names the zones by their abbreviations (CEST), where en-CA writes GMT+2.
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(new Date(iso));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')} ${part('timeZoneName')}`;
}

export function schedulesPage(frame: ConsoleFrame, schedules: readonly ScheduleDetail[]): string {
  return consolePage(
    frame,
    'Schedules',
    html`<h1>Schedules</h1>
<p>The service fires these whether or not a node of yours is up, each occurrence once. Make and change them with <code>swarm-node schedule</code>.</p>
${schedules.length === 0 ? html`<p class="panel">You have no schedule: <code>swarm-node schedule add AGENT --every 1h</code>.</p>` : schedules.map(scheduleSection)}`,
  );
}

function scheduleSection(s: ScheduleDetail): SafeHtml {
  const when = s.cron !== null ? `cron ${s.cron}` : `every ${s.interval_seconds} s`;
  const state = s.paused ? `Paused (${s.pause_reason ?? 'user'})` : 'Active';
  const next = s.paused
    ? html`<p>Paused: no run is planned until it is resumed.</p>`
    : html`<table>
<caption>Next runs of ${s.schedule_id}</caption>
<thead><tr><th scope="col">In ${s.time_zone}</th><th scope="col">In your browser's zone</th></tr></thead>
<tbody>${s.next_fire_times.slice(0, 3).map((at) => html`<tr><td>${inZone(at, s.time_zone)}</td><td>${timeElement(at)}</td></tr>`)}</tbody>
</table>`;
  const skips = s.skips
    .slice(0, 3)
    .map((k) => html`<li>Skipped ${String(k.count)}× (${k.reason}) from ${timeElement(k.first_at)} to ${timeElement(k.last_at)}</li>`);
  return html`<section aria-labelledby="schedule-${s.schedule_id}">
<h2 id="schedule-${s.schedule_id}">${s.agent_id}: ${when} in ${s.time_zone}</h2>
<p><span data-label="State">${state}</span>; up to ${formatDollars(s.cost.per_day_cents)} a day, ${formatDollars(s.cost.per_month_cents)} a month. <code>${s.schedule_id}</code></p>
${next}
${skips.length === 0 ? null : html`<ul class="muted">${skips}</ul>`}
</section>`;
}

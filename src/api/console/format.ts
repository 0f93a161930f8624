// How the console shows times, sizes and statuses: the same words and units on every page.
import { html, type SafeHtml } from '../wallet-page/html.js';

/**
 * A time as UTC to the minute, machine-readable in datetime; an ISO text or milliseconds. The one place that renders a
 * time: every console page's script (local-time-script.ts) rewrites these elements into the browser's zone.
 */
export function timeElement(at: string | number): SafeHtml {
  const iso = new Date(at).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** A time, or a dash (with its meaning for a screen reader) when there is none. */
export function maybeTime(at: string | number | null, none = 'never'): SafeHtml {
  return at === null ? html`<span aria-label="${none}">—</span>` : timeElement(at);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A run's status as a word (never a colour alone): failed and cancelled in red besides. */
export function statusText(status: string): SafeHtml {
  return html`<span class="status-${status}">${status}</span>`;
}

/** How long something took, as a person reads it: "42 s", "3 min 5 s", "2 h 4 min". */
export function formatDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.round(milliseconds / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The span between two times, or a dash with its meaning when it has not ended. */
export function durationBetween(from: string | null, to: string | null, none: string): SafeHtml {
  if (from === null || to === null) return html`<span aria-label="${none}">—</span>`;
  return html`${formatDuration(Date.parse(to) - Date.parse(from))}`;
}

/** What started a run, as a word (docs/api.md "Triggers"); a dash for a run from before it was recorded. */
export function triggerText(trigger: string | undefined): SafeHtml {
  return trigger === undefined ? html`<span aria-label="not recorded">—</span>` : html`${TRIGGER_WORDS[trigger] ?? trigger}`;
}

const TRIGGER_WORDS: Record<string, string> = { manual: 'manual', schedule: 'schedule', rerun: 're-run', api: 'API' };

// How the console shows times, sizes and statuses: the same words and units on every page.
import { html, type SafeHtml } from '../wallet-page/html.js';

/** A time as UTC to the minute, machine-readable in datetime; an ISO text or milliseconds. */
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

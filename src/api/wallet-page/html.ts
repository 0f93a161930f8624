// Server-rendered HTML for the wallet page and the console: one template, every interpolated value escaped through
// `html`, and one inline stylesheet allowed by its hash in the Content-Security-Policy, so a page needs no other
// request. The console's pages add their inline scripts (local times; the run page's log follower), each allowed by
// its hash too (security.ts).
import { STYLESHEET } from './stylesheet.js';

/** Markup that is already safe; only `html` and `raw` make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Interpolation = SafeHtml | string | number | null | undefined | readonly Interpolation[];

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const SPECIAL = /[&<>"']/;
const SPECIALS = /[&<>"']/g;

/** One pass, and none for a text with nothing to escape (most): a run page escapes a thousand log lines. */
export function escapeHtml(text: string): string {
  return SPECIAL.test(text) ? text.replace(SPECIALS, (character) => ESCAPES[character]!) : text;
}

/** Tagged template: strings and numbers are escaped, SafeHtml is kept, arrays are joined, null and undefined vanish. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new SafeHtml(out);
}

function render(value: Interpolation): string {
  if (value === null || value === undefined) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export interface PageOptions {
  /** Before <main>: the console's skip link, header and navigation. */
  before?: SafeHtml;
  /** The console's tables want the width. */
  wide?: boolean;
  /** Inline scripts, at the end of the body; each one's hash must be in the page's policy. */
  scripts?: readonly string[];
}

export function page(title: string, body: SafeHtml, options: PageOptions = {}): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} · svc wallet</title>
<style>${new SafeHtml(STYLESHEET)}</style>
</head>
<body>
${options.before}<main id="main"${options.wide === true ? html` class="wide"` : null}>
${body}
</main>
${(options.scripts ?? []).map(
  (script) => html`<script>${new SafeHtml(script)}</script>
`,
)}</body>
</html>
`.value;
}

// Server-rendered HTML for the wallet page: one template, every interpolated value escaped through `html`, and
// one inline stylesheet allowed by its hash in the Content-Security-Policy, so the page needs no other request.
import { createHash } from 'node:crypto';

/** Markup that is already safe; only `html` and `raw` make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Interpolation = SafeHtml | string | number | null | undefined | readonly Interpolation[];

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
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

// Contrast: body text #1b1f24 on #ffffff is 16:1, muted #4a5360 is 7.6:1, links and buttons #0b57d0 on white 6.6:1.
const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f3f5f8}
main{max-width:40rem;margin:0 auto;padding:1.25rem 1rem 3rem}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
section,.panel{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:1rem 1.25rem;margin:0 0 1rem}
section h2{margin-top:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0}
dt{color:#4a5360}
dd{margin:0;overflow-wrap:anywhere}
.balance{font-size:2rem;font-weight:700;font-variant-numeric:tabular-nums}
.muted{color:#4a5360}
table{width:100%;border-collapse:collapse;font-variant-numeric:tabular-nums}
caption{text-align:left;color:#4a5360;padding-bottom:.5rem}
th,td{text-align:left;padding:.4rem .5rem .4rem 0;border-bottom:1px solid #e3e7eb;vertical-align:top}
td.num,th.num{text-align:right}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.95em}
pre{background:#1b1f24;color:#f3f5f8;padding:.75rem 1rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
label{display:block;font-weight:600;margin-bottom:.25rem}
input{font:inherit;padding:.5rem .6rem;border:1px solid #6e7781;border-radius:6px;width:100%;max-width:12rem}
button{font:inherit;font-weight:600;padding:.5rem 1rem;border-radius:6px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer;margin-top:.5rem}
button.secondary{background:#fff;color:#0b57d0}
button:focus-visible,input:focus-visible,a:focus-visible{outline:3px solid #f0b400;outline-offset:2px}
a{color:#0b57d0}
.alert{border-left:4px solid #b42318;background:#fff4f2;padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem}
.notice{border-left:4px solid #1a7f37;background:#eef9f0;padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem}
.status-failed{color:#b42318}
.sandbox{border-style:dashed}
@media (max-width:30rem){dl{grid-template-columns:1fr}dt{margin-top:.5rem}.balance{font-size:1.6rem}
table,tbody,tr,td{display:block}thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
tr{border-bottom:1px solid #e3e7eb;padding:.5rem 0}td{border:0;padding:.1rem 0}td.num{text-align:left}
td[data-label]::before{content:attr(data-label) ": ";color:#4a5360}caption{display:block}}
`.trim();

/** The CSP source that allows exactly this stylesheet and no other inline style. */
export const STYLESHEET_CSP_SOURCE = `'sha256-${createHash('sha256').update(STYLESHEET).digest('base64')}'`;

export function page(title: string, body: SafeHtml): string {
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
<main>
${body}
</main>
</body>
</html>
`.value;
}

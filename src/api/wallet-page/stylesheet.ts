// The one stylesheet of the wallet page and the console, inline in every page and allowed by its hash in the
// Content-Security-Policy (security.ts): no other request, no inline style attribute (the charts use SVG's
// presentation attributes and these classes).
import { createHash } from 'node:crypto';

// Contrast: body text #1b1f24 on #ffffff is 16:1, muted #4a5360 is 7.6:1, links and buttons #0b57d0 on white 6.6:1,
// the failed red #b42318 on white 6.5:1, the online green #116329 on #eef9f0 7.2:1.
export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f3f5f8}
main{max-width:40rem;margin:0 auto;padding:1.25rem 1rem 3rem}
main.wide{max-width:68rem}
h1{font-size:1.6rem;margin:.5rem 0 1rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
h3{font-size:1.05rem;margin:1rem 0 .5rem}
section,.panel{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:1rem 1.25rem;margin:0 0 1rem}
section h2{margin-top:0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0}
dt{color:#4a5360}
dd{margin:0;overflow-wrap:anywhere}
.balance{font-size:2rem;font-weight:700;font-variant-numeric:tabular-nums}
.muted{color:#4a5360}
table{width:100%;border-collapse:collapse;font-variant-numeric:tabular-nums}
caption{text-align:left;color:#4a5360;padding-bottom:.5rem}
th,td{text-align:left;padding:.4rem .5rem .4rem 0;border-bottom:1px solid #e3e7eb;vertical-align:top;overflow-wrap:break-word}
td.num,th.num{text-align:right}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.95em}
pre{background:#1b1f24;color:#f3f5f8;padding:.75rem 1rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
label,legend{display:block;font-weight:600;margin-bottom:.25rem}
fieldset{border:0;padding:0;margin:0 0 .75rem}
fieldset label{display:inline-flex;gap:.35rem;align-items:center;font-weight:400;margin-right:1rem}
input,select,textarea{font:inherit;padding:.5rem .6rem;border:1px solid #6e7781;border-radius:6px;width:100%;max-width:12rem;background:#fff;color:#1b1f24}
input[type=checkbox]{width:auto;margin:0}
input.long,textarea{max-width:100%}
textarea{min-height:5rem;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.field{margin-bottom:.75rem}
.fields{display:flex;flex-wrap:wrap;gap:.75rem 1rem;align-items:flex-end}
.fields .field{margin:0}
button{font:inherit;font-weight:600;padding:.5rem 1rem;border-radius:6px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer;margin-top:.5rem}
button.secondary{background:#fff;color:#0b57d0}
button.danger{background:#fff;color:#b42318;border-color:#b42318}
td form button{margin:0;padding:.25rem .6rem}
button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,a:focus-visible,[tabindex]:focus-visible{outline:3px solid #f0b400;outline-offset:2px}
a{color:#0b57d0}
.alert{border-left:4px solid #b42318;background:#fff4f2;padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem}
.notice{border-left:4px solid #1a7f37;background:#eef9f0;padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem}
.status-failed,.status-cancelled{color:#b42318}
.status-online{color:#116329;font-weight:600}
.sandbox{border-style:dashed}
.skip{position:absolute;left:-100rem}
.skip:focus{left:1rem;top:.5rem;background:#fff;padding:.5rem;z-index:1}
.top{background:#fff;border-bottom:1px solid #d0d7de}
.top-inner{max-width:68rem;margin:0 auto;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center;justify-content:space-between}
.brand{font-weight:700}
.top form{display:flex;gap:.75rem;align-items:center;flex-wrap:wrap}
.top button{margin:0}
nav ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem .5rem}
nav a{display:inline-block;padding:.35rem .6rem;border-radius:6px;text-decoration:none}
nav a[aria-current=page]{background:#0b57d0;color:#fff}
.log{list-style:none;margin:0;padding:.75rem 1rem;background:#1b1f24;color:#f3f5f8;border-radius:6px;max-height:28rem;overflow:auto;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
.log li{white-space:pre-wrap;overflow-wrap:anywhere}
.log .stderr{color:#ffb4a8}
.log .node{color:#a8c7fa}
.log .muted{color:#b6c0cc}
.chart{width:100%;height:auto;display:block}
.chart .bar{fill:#0b57d0}
.chart .axis{stroke:#6e7781}
.chart text{fill:#4a5360;font-size:11px}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
@media (max-width:40rem){dl{grid-template-columns:1fr}dt{margin-top:.5rem}.balance{font-size:1.6rem}
table,tbody,tr,td{display:block}thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%)}
tr{border-bottom:1px solid #e3e7eb;padding:.5rem 0}td{border:0;padding:.1rem 0}td.num{text-align:left}
td[data-label]::before{content:attr(data-label) ": ";color:#4a5360}caption{display:block}}
`.trim();

/** The CSP source that allows exactly this stylesheet and no other inline style. */
export const STYLESHEET_CSP_SOURCE = `'sha256-${createHash('sha256').update(STYLESHEET).digest('base64')}'`;

// The console's frame around each page of the signed-in user (docs/api.md "Console"): a skip link, the header with
// who is signed in and the sign-out button, the navigation (the current page marked for screen readers), and the
// page's own <main>, then the script that shows its times in the browser's zone (local-time-script.ts). Links are relative, so the console works under any path a proxy serves the wallet at.
import { html, page, type SafeHtml } from '../wallet-page/html.js';
import { LOCAL_TIME_SCRIPT } from './local-time-script.js';

export type ConsoleSection = 'wallet' | 'nodes' | 'runs' | 'usage' | 'budgets' | 'schedules' | 'secrets' | 'webhooks';

const SECTIONS: ReadonlyArray<readonly [ConsoleSection, string, string]> = [
  ['wallet', 'login', 'Wallet'],
  ['nodes', 'nodes', 'Nodes'],
  ['runs', 'runs', 'Runs'],
  ['usage', 'usage', 'Usage'],
  ['budgets', 'budgets', 'Budgets'],
  ['schedules', 'schedules', 'Schedules'],
  ['secrets', 'secrets', 'Secrets'],
  ['webhooks', 'webhooks', 'Webhooks'],
];

export interface ConsoleFrame {
  email: string;
  /** The section the page belongs to, marked in the navigation. */
  current: ConsoleSection;
  /** What leads from the page's directory back to the wallet's: '' for /wallet/runs, '../' for /wallet/runs/ID. */
  base: string;
}

export interface ConsolePageOptions {
  /** A sentence about what the last action did (role=status). */
  notice?: string | undefined;
  /** Why the last action was refused, where no form of the page shows it (role=alert). */
  alert?: string | undefined;
  /** One inline script besides the local times every console page runs (the run page's log follower). */
  script?: string;
}

export function consolePage(frame: ConsoleFrame, title: string, body: SafeHtml, options: ConsolePageOptions = {}): string {
  const links = SECTIONS.map(
    ([section, href, label]) =>
      html`<li><a href="${frame.base}${href}"${section === frame.current ? html` aria-current="page"` : null}>${label}</a></li>`,
  );
  const before = html`<a class="skip" href="#main">Skip to content</a>
<header class="top">
<div class="top-inner">
<span class="brand">svc console</span>
<form method="post" action="${frame.base}logout"><span class="muted">Signed in as ${frame.email}</span> <button type="submit" class="secondary">Sign out</button></form>
</div>
<nav aria-label="Console" class="top-inner"><ul>${links}</ul></nav>
</header>
`;
  const notice =
    options.notice === undefined
      ? null
      : html`<p class="notice" role="status">${options.notice}</p>
`;
  const alert =
    options.alert === undefined
      ? null
      : html`<p class="alert" role="alert">${options.alert}</p>
`;
  return page(title, html`${alert}${notice}${body}`, {
    before,
    wide: frame.current !== 'wallet',
    // Every console page shows its times in the browser's zone: the layout adds the script, so no page can forget it.
    scripts: options.script === undefined ? [LOCAL_TIME_SCRIPT] : [LOCAL_TIME_SCRIPT, options.script],
  });
}

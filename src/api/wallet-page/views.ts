// The wallet page's three views: signed in (the console's first page), signed out, and an error that says what to
// do next.
import { findAgentSku } from '../../contract/agents.js';
import { CHAIN_ID } from '../../contract/claims.js';
import { formatDollars } from '../../contract/money.js';
import { TIERS, isTierId } from '../../contract/tiers.js';
import { consolePage } from '../console/layout.js';
import { timeElement } from '../console/format.js';
import { html, page, type SafeHtml } from './html.js';
import type { RecentRun } from './recent-runs.js';
import type { WalletTransaction } from '../wallet/transactions.js';
import { MAX_SANDBOX_FUNDING_CENTS } from './sandbox-funding.js';

export interface SignedInModel {
  email: string;
  tier: string;
  balanceCents: number;
  sessionExpiresAt: number;
  runs: RecentRun[];
  /** The ledger's latest entries, newest first, each with the balance it left (wallet/transactions.ts). */
  transactions: WalletTransaction[];
  sandbox: boolean;
  /** A sentence shown above the wallet: what the last action did. */
  notice?: string;
  /** Why the last funding was refused, and the amount as typed, to show it again. */
  fundError?: { message: string; amount: string };
}

export function signedInPage(model: SignedInModel): string {
  const tierName = isTierId(model.tier) ? TIERS[model.tier].name : model.tier;
  return consolePage(
    { email: model.email, current: 'wallet', base: '' },
    'Your wallet',
    html`<h1>Your wallet</h1>
<section aria-labelledby="balance-heading">
<h2 id="balance-heading">Balance</h2>
<p class="balance" data-testid="balance">${formatDollars(model.balanceCents)}</p>
<dl>
<dt>Signed in as</dt><dd data-testid="email">${model.email}</dd>
<dt>Plan</dt><dd>${tierName}</dd>
<dt>Paid from</dt><dd data-testid="chain">svc pay wallet, chain ${CHAIN_ID} <span class="muted">(the payment rail every run is debited from; your access token names the same chain)</span></dd>
<dt>Session ends</dt><dd>${timeElement(model.sessionExpiresAt)}</dd>
</dl>
</section>
${model.sandbox ? fundForm(model) : null}
<section aria-labelledby="transactions-heading">
<h2 id="transactions-heading">Transactions</h2>
${model.transactions.length === 0 ? html`<p class="muted">No transactions yet: funding the wallet is the first.</p>` : transactionsTable(model.transactions)}
</section>
<section aria-labelledby="runs-heading">
<h2 id="runs-heading">Recent runs</h2>
${model.runs.length === 0 ? html`<p class="muted">No runs yet. Run an agent on your node with <code>swarm-node run &lt;agent_id&gt;</code>; each run is charged here.</p>` : runsTable(model.runs)}
</section>`,
    { notice: model.notice },
  );
}

function fundForm(model: SignedInModel): SafeHtml {
  const error = model.fundError;
  return html`<section class="sandbox" aria-labelledby="fund-heading">
<h2 id="fund-heading">Fund wallet (sandbox)</h2>
<p class="muted">Sandbox mode: the payment goes through the sandbox provider and its signed webhook; no real money moves.</p>
${error === undefined ? null : html`<p class="alert" role="alert" id="fund-error">${error.message}</p>`}
<form method="post" action="fund">
<label for="amount">Amount in dollars</label>
<input id="amount" name="amount" inputmode="decimal" autocomplete="off" required maxlength="16" placeholder="10.00" value="${error?.amount ?? ''}"${error === undefined ? null : html` aria-invalid="true" aria-describedby="fund-error"`}>
<p class="muted">From $0.01 to ${formatDollars(MAX_SANDBOX_FUNDING_CENTS)}.</p>
<button type="submit">Add funds</button>
</form>
</section>`;
}

function runsTable(runs: RecentRun[]): SafeHtml {
  const rows = runs.map(
    (run) => html`<tr>
<td><a href="runs/${run.run_id}">${findAgentSku(run.agent_id)?.name ?? run.agent_id}</a><br><span class="muted"><code>${run.agent_id}</code></span></td>
<td data-label="Status"${run.status === 'failed' ? html` class="status-failed"` : null}>${run.status}</td>
<td class="num" data-label="Charge">${formatDollars(run.charged_cents)}</td>
<td data-label="Started">${timeElement(run.started_at)}</td>
</tr>`,
  );
  return html`<table>
<caption>The last ${runs.length} run${runs.length === 1 ? '' : 's'}, newest first. A failed run is refunded. <a href="runs">Every run</a></caption>
<thead><tr><th scope="col">Agent</th><th scope="col">Status</th><th scope="col" class="num">Charge</th><th scope="col">Started</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

const KIND_WORDS: Record<WalletTransaction['kind'], string> = { credit: 'Funding', debit: 'Charge', refund: 'Refund' };

function transactionsTable(entries: WalletTransaction[]): SafeHtml {
  const rows = entries.map(
    (entry) => html`<tr>
<td data-label="When">${timeElement(entry.created_at)}</td>
<td data-label="Kind">${KIND_WORDS[entry.kind]}</td>
<td data-label="For">${entry.run_id === null ? html`payment <code>${entry.payment_id ?? '—'}</code>` : html`<a href="runs/${entry.run_id}">${entry.agent_id === null ? 'run' : (findAgentSku(entry.agent_id)?.name ?? entry.agent_id)}</a> <code class="muted">${entry.run_id}</code>`}</td>
<td class="num" data-label="Amount">${entry.change_cents < 0 ? `−${formatDollars(-entry.change_cents)}` : `+${formatDollars(entry.change_cents)}`}</td>
<td class="num" data-label="Balance">${formatDollars(entry.balance_after_cents)}</td>
</tr>`,
  );
  return html`<table data-testid="transactions">
<caption>The last ${entries.length} transaction${entries.length === 1 ? '' : 's'}, newest first, each with the balance it left: funding, each run's charge, and the refund of each run that failed.</caption>
<thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">For</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Balance</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

export function signedOutPage(options: { arrivedFromAnotherSite: boolean; notice?: string }): string {
  return page(
    'Sign in',
    html`<h1>Sign in to your wallet</h1>
${options.notice === undefined ? null : html`<p class="notice" role="status">${options.notice}</p>`}
${options.arrivedFromAnotherSite ? continueAfterCrossSiteArrival() : null}
<div class="panel">
<p>You are not signed in.</p>
${signInHelp()}
</div>`,
  );
}

// A link to the wallet followed from another site: the session cookie is SameSite=Strict, so the browser holds it
// back on such a navigation. A click here is a navigation from this page, which carries it.
function continueAfterCrossSiteArrival(): SafeHtml {
  return html`<p class="notice" role="status">If you are signed in, your browser held back the session on the way here from another site.
<a href="login">Open your wallet</a>.</p>`;
}

export function errorPage(options: { title: string; message: string; base: string; signInHelp: boolean }): string {
  return page(
    options.title,
    html`<h1>${options.title}</h1>
<div class="panel">
<p class="alert" role="alert">${options.message}</p>
${options.signInHelp ? signInHelp() : html`<p><a href="${options.base}login">Back to the wallet</a></p>`}
</div>`,
  );
}

function signInHelp(): SafeHtml {
  return html`<h2>How to sign in</h2>
<p>On your node, print a fresh sign-in link and open it in this browser:</p>
<pre><code>swarm-node wallet login</code></pre>
<p>Not signed in on the node yet? Sign in there first: it mails a code to the address you paid with and asks for it.</p>
<pre><code>swarm-node login</code></pre>
<p class="muted">The link carries your access token, a secret: open it yourself and do not share it. This page swaps it for a session and removes it from the address bar.</p>`;
}

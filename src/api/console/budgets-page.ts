// The console's budgets page: the user's caps with what is spent and when each resets (GET /v1/swarm/budgets), a
// form that sets one (in dollars; per day or month, on all agents or one) and a remove button per cap. Changes go
// through budgets/budget-changes.ts, as the API's: raising or removing one without a recent sign-in is refused, and
// the page then offers the confirmation by mail (recent-sign-in.ts).
import { AGENT_SKUS, findAgentSku } from '../../contract/agents.js';
import { ALL_AGENTS_SCOPE, MAX_CAP_CENTS, type Budget } from '../../contract/budgets.js';
import { formatDollars } from '../../contract/money.js';
import { html, type SafeHtml } from '../wallet-page/html.js';
import { timeElement } from './format.js';
import { consolePage, type ConsoleFrame } from './layout.js';
import { recentSignInPanel } from './recent-sign-in.js';

export interface BudgetsModel {
  budgets: readonly Budget[];
  /** Why the last form was refused, and what was typed, to show it again. */
  error?: { message: string; scope: string; period: string; cap: string };
  /** The change was refused for want of a recent sign-in: the page offers to confirm one. */
  confirm?: boolean;
  notice?: string;
}

export function budgetsPage(frame: ConsoleFrame, model: BudgetsModel): string {
  return consolePage(
    frame,
    'Budgets',
    html`<h1>Budgets</h1>
<p>A budget caps what your runs may be charged in a UTC day or month, on all your agents or on one. A run that would go over it is refused (<code>budget_exceeded</code>) and nothing is charged, however it was started.</p>
${model.confirm === true ? recentSignInPanel(frame.base, undefined, 'budgets', 'budgets (raising or removing one)') : null}
${model.budgets.length === 0 ? html`<p class="panel">You have no budget: your runs are limited by your wallet's balance only.</p>` : budgetsTable(frame, model.budgets)}
${setForm(frame, model)}`,
    { notice: model.notice },
  );
}

const periodWord = (period: string): string => (period === 'day' ? 'daily' : 'monthly');
const scopeName = (agentId: string | null): string => (agentId === null ? 'all agents' : (findAgentSku(agentId)?.name ?? agentId));

function budgetsTable(frame: ConsoleFrame, budgets: readonly Budget[]): SafeHtml {
  const rows = budgets.map((budget) => {
    const what = `the ${periodWord(budget.period)} budget on ${scopeName(budget.agent_id)}`;
    return html`<tr>
<td>${scopeName(budget.agent_id)}</td>
<td data-label="Period">${budget.period === 'day' ? 'per day' : 'per month'}</td>
<td class="num" data-label="Cap">${formatDollars(budget.cap_cents)}</td>
<td class="num" data-label="Spent">${formatDollars(budget.spent_cents)}</td>
<td data-label="Resets">${timeElement(budget.resets_at)}</td>
<td><form method="post" action="${frame.base}budgets/remove"><input type="hidden" name="scope" value="${budget.agent_id ?? ALL_AGENTS_SCOPE}"><input type="hidden" name="period" value="${budget.period}"><button type="submit" class="danger">Remove<span class="sr-only"> ${what}</span></button></form></td>
</tr>`;
  });
  return html`<table>
<caption>Your budgets and what is spent against each this period.</caption>
<thead><tr><th scope="col">On</th><th scope="col">Period</th><th scope="col" class="num">Cap</th><th scope="col" class="num">Spent</th><th scope="col">Resets</th><th scope="col"><span class="sr-only">Remove</span></th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

function setForm(frame: ConsoleFrame, model: BudgetsModel): SafeHtml {
  const error = model.error;
  const option = (value: string, label: string, chosen: string | undefined) =>
    html`<option value="${value}"${value === chosen ? html` selected` : null}>${label}</option>`;
  const invalid = error === undefined ? null : html` aria-invalid="true" aria-describedby="budget-error"`;
  return html`<section aria-labelledby="set-heading">
<h2 id="set-heading">Set a budget</h2>
${error === undefined ? null : html`<p class="alert" role="alert" id="budget-error">${error.message}</p>`}
<form method="post" action="${frame.base}budgets" class="fields">
<div class="field"><label for="budget-scope">On</label>
<select id="budget-scope" name="scope">${option(ALL_AGENTS_SCOPE, 'All agents', error?.scope)}${AGENT_SKUS.map((sku) => option(sku.agent_id, sku.name, error?.scope))}</select></div>
<div class="field"><label for="budget-period">Period</label>
<select id="budget-period" name="period">${option('day', 'Per day', error?.period)}${option('month', 'Per month', error?.period)}</select></div>
<div class="field"><label for="budget-cap">Cap in dollars</label>
<input id="budget-cap" name="cap" inputmode="decimal" autocomplete="off" required maxlength="16" placeholder="5.00" value="${error?.cap ?? ''}"${invalid}></div>
<div class="field"><button type="submit">Set budget</button></div>
</form>
<p class="muted">From $0.00 (no run at all) to ${formatDollars(MAX_CAP_CENTS)}. Setting a budget that exists changes its cap.
Raising or removing one needs a sign-in within the last 15 minutes; lowering one never does.</p>
</section>`;
}

// The console's re-run (docs/api.md "Console"): a new billed run of the same agent with the same input, as
// Buildkite's and GitHub Actions' "Re-run" start one, after this page names its price. Its form carries a fresh
// Idempotency-Key, so a form sent twice (a double click, a reload) starts one run.
import { findAgentSku } from '../../contract/agents.js';
import { formatDollars } from '../../contract/money.js';
import { html } from '../wallet-page/html.js';
import { consolePage, type ConsoleFrame } from './layout.js';

export interface RerunModel {
  runId: string;
  agentId: string;
  priceCents: number;
  balanceCents: number;
  idempotencyKey: string;
}

export function rerunPage(frame: ConsoleFrame, model: RerunModel): string {
  const name = findAgentSku(model.agentId)?.name ?? model.agentId;
  const runPath = `${frame.base}runs/${encodeURIComponent(model.runId)}`;
  return consolePage(
    frame,
    `Run ${name} again`,
    html`<h1>Run ${name} again</h1>
<section aria-labelledby="rerun-heading">
<h2 id="rerun-heading">A new run, with the same input</h2>
<p>This starts a new run of <code>${model.agentId}</code> with the input of run <code>${model.runId}</code>. It costs <strong id="rerun-price">${formatDollars(model.priceCents)}</strong>, taken from your wallet (now ${formatDollars(model.balanceCents)}) when the run is accepted, and given back if it fails or is cancelled.</p>
<form method="post" action="${runPath}/rerun">
<input type="hidden" name="idempotency_key" value="${model.idempotencyKey}">
<button type="submit">Start the run for ${formatDollars(model.priceCents)}</button>
</form>
<p><a href="${runPath}">Back to the run</a></p>
</section>`,
  );
}

// A run's input and output on its console page, for a person (docs/api.md "Console"): the output rendered as the CLI
// renders it (`swarm-node run`, `runs show`: src/lib/run-output.ts, the one place that knows the agents' shapes:
// findings with file and line, drafts, a quiz, an answer with its citation), the JSON itself collapsed under it; a
// failed run's reason; the input as JSON with any value of the agent's secrets hidden, as the node hides them in
// what a run writes (lib/redact.ts).
import { Chalk } from 'chalk';
import type { RunResponse } from '../../contract/schemas.js';
import { renderRunOutput } from '../../lib/run-output.js';
import { html, type SafeHtml } from '../wallet-page/html.js';

/** More of an output than this is not shown (an output is up to 1 MiB): GET /v1/swarm/runs/{run_id} has it whole. */
export const OUTPUT_SHOWN_CHARS = 100_000;
/** The CLI's rendering without colour: the page says severity in words, as the terminal does besides its colours. */
const PLAIN = new Chalk({ level: 0 });

export function outputSection(run: RunResponse): SafeHtml {
  return html`<section aria-labelledby="output-heading">
<h2 id="output-heading">Output</h2>
${outputOf(run)}
</section>`;
}

/** A failed or cancelled run's reason, as its output says it ({error, message}), or null. */
export function failureOf(run: Pick<RunResponse, 'status' | 'output'>): { error: string; message: string } | null {
  if (run.status !== 'failed' && run.status !== 'cancelled') return null;
  const output = (typeof run.output === 'object' && run.output !== null ? run.output : {}) as { error?: unknown; message?: unknown };
  return {
    error: typeof output.error === 'string' ? output.error : run.status,
    message: typeof output.message === 'string' ? output.message : '',
  };
}

function outputOf(run: RunResponse): SafeHtml {
  if (run.output === null) return html`<p class="muted">${run.finished_at === null ? 'Not yet: the run has not ended.' : 'None.'}</p>`;
  const json = JSON.stringify(run.output, null, 2);
  const rendered = renderRunOutput(run.output, PLAIN, run.run_id);
  // The CLI falls back to the JSON itself when it knows none of the shapes: then the JSON is the output, shown open.
  const forPerson = rendered !== json && failureOf(run) === null;
  return html`${forPerson ? html`<pre class="rendered" tabindex="0" aria-label="The run's output" id="output-rendered">${cut(rendered)}</pre>` : null}
<details${forPerson ? null : html` open`}><summary>The output as JSON (${json.length.toLocaleString('en-US')} characters)</summary>
<pre tabindex="0" aria-label="The run's output, as JSON"><code>${cut(json)}</code></pre>
${json.length > OUTPUT_SHOWN_CHARS ? html`<p class="muted">The output is cut at ${OUTPUT_SHOWN_CHARS.toLocaleString('en-US')} characters here; <code>swarm-node runs show ${run.run_id} --json</code> prints it whole.</p>` : null}
</details>`;
}

function cut(text: string): string {
  return text.length > OUTPUT_SHOWN_CHARS ? text.slice(0, OUTPUT_SHOWN_CHARS) : text;
}

/** The run's input as it was sent, its secrets' values hidden; null: it had none. */
export function inputSection(input: unknown): SafeHtml {
  const body =
    input === null || input === undefined
      ? html`<p class="muted">None: the agent ran with its defaults.</p>`
      : html`<pre tabindex="0" aria-label="The run's input, as JSON"><code>${cut(JSON.stringify(input, null, 2))}</code></pre>`;
  return html`<section aria-labelledby="input-heading">
<h2 id="input-heading">Input</h2>
${body}
</section>`;
}

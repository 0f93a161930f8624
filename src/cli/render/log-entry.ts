// One line of a run's log, for a person (`swarm-node logs`). Most agents answer with one JSON object on stdout, which
// the log keeps as one line of up to 16 KiB: printed as it is, it is a wall nobody reads. A line that is a JSON
// object is shown as `run` shows an answer (the summary, findings with file and line: src/lib/run-output.ts), or, in a shape
// that has none of those, by its keys; the whole stays in --json and in `swarm-node runs show`.
import type { ChalkInstance } from 'chalk';
import type { LogEntry } from '../../contract/jobs.js';
import { LOG_LINE_CUT_MARK } from '../../contract/run-log-limits.js';
import { renderKnownOutput } from '../../lib/run-output.js';

/** A line shorter than this prints as it is, JSON or not: it reads well enough. */
const SHORT_LINE = 200;
/** The keys named for an object in no shape run-output knows. */
const KEYS_NAMED = 8;

export function renderLogEntry(entry: LogEntry, style: ChalkInstance, options: { timestamps: boolean; runId: string }): string {
  const time = options.timestamps ? `${style.dim(entry.at)} ` : '';
  if (entry.stream === 'stderr') return `${time}${style.red('[stderr]')} ${entry.text}`;
  if (entry.stream !== 'stdout') return `${time}${style.yellow('[node]')} ${entry.text}`;
  const answer = entry.text.length < SHORT_LINE ? undefined : answerIn(entry.text, style, options.runId);
  return `${time}${answer ?? entry.text}`;
}

/** The line as an answer, when it is (or begins as) one JSON object; undefined otherwise. */
function answerIn(text: string, style: ChalkInstance, runId: string): string | undefined {
  const whole = ` whole: swarm-node runs show ${runId} --json`;
  const size = `${(Buffer.byteLength(text) / 1024).toFixed(1)} KiB`;
  if (!text.startsWith('{')) return undefined;
  if (text.endsWith(LOG_LINE_CUT_MARK)) {
    // The node cut the line: its JSON cannot be read, but it is the answer's beginning.
    return `${style.dim(`[answer, a JSON object cut at ${size} in the log;${whole}]`)} ${text.slice(0, SHORT_LINE)}…`;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const label = style.dim(`[answer, a JSON object of ${size};${whole}]`);
  const known = renderKnownOutput(parsed, style, runId);
  if (known !== undefined) return `${label}\n${indent(known)}`;
  const keys = Object.keys(parsed);
  const named = keys.slice(0, KEYS_NAMED).join(', ') + (keys.length > KEYS_NAMED ? `, and ${keys.length - KEYS_NAMED} more` : '');
  return `${label}\n${indent(`keys: ${named}`)}`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? '' : `  ${line}`))
    .join('\n');
}

// A batch of a run's log from its node (docs/api.md "Run logs"): taken only from the node and lease that hold the
// run while it runs, or that finished it (its last batch may come after a lost answer); stored once per seq; the
// cap counted here too, whatever the node counted, with the truncation marker stored once and nothing after it.
import { SvcError } from '../../contract/errors.js';
import type { LogBatch, LogBatchResponse, LogEntry } from '../../contract/jobs.js';
import { LOG_TRUNCATION_TEXT, MAX_LOG_BYTES_PER_RUN, logTextBytes } from '../../contract/run-log-limits.js';
import type { ServiceContext } from '../context.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import type { RunRow, RunStore } from '../runs/run-store.js';
import { isFinished } from '../runs/run-view.js';
import type { Tables } from '../store/tables.js';
import type { LogStore } from './log-store.js';

type EntryRow = Tables['run_log_entries'];

/**
 * The run, when this node and lease hold it, or finished it (a last batch may come after a lost answer): else 404 for
 * another user's run as for none (docs/api.md "Runs on the node"), 409 lease_lost for one it does not hold.
 */
export async function runHeldBy(runs: RunStore, node: EnrolledNode, runId: string, leaseId: string, what: string): Promise<RunRow> {
  const run = await runs.get(runId);
  if (run === undefined || run.user_id !== node.user_id) throw new SvcError('run_not_found', `no run ${runId} of this node's user`);
  const holds = run.node_id === node.node_id && run.lease_id === leaseId;
  if (!holds || (isFinished(run) && run.finished_by !== 'node')) {
    throw new SvcError('lease_lost', `this node does not hold run ${runId}: its ${what} is not taken`, {
      extensions: { run_id: runId, run_status: run.status },
    });
  }
  return run;
}

export async function acceptLogBatch(
  ctx: ServiceContext,
  deps: { runs: RunStore; logs: LogStore },
  node: EnrolledNode,
  runId: string,
  batch: LogBatch,
): Promise<LogBatchResponse> {
  const { runs, logs } = deps;
  const { answer, stored } = await ctx.store.transaction(async () => {
    const run = await runHeldBy(runs, node, runId, batch.lease_id, 'log');
    const state = await logs.stateForUpdate(runId);
    const rows: EntryRow[] = [];
    let { stored_bytes: storedBytes, last_seq: lastSeq, truncated } = state;
    const entries = [...batch.entries].sort((a, b) => a.seq - b.seq);
    const known =
      truncated === 1 || entries.length === 0 ? new Set<number>() : await logs.storedSeqs(runId, entries[0]!.seq, entries.at(-1)!.seq);
    for (const entry of entries) {
      if (truncated === 1) break;
      if (known.has(entry.seq)) continue;
      known.add(entry.seq);
      const text = storableText(entry.text);
      const bytes = logTextBytes(text);
      const marker = entry.stream === 'node' && text === LOG_TRUNCATION_TEXT;
      if (marker || storedBytes + bytes > MAX_LOG_BYTES_PER_RUN) {
        // The node's marker, or this service's in place of the first entry past the cap: once, and the log ends.
        rows.push(rowOf(runId, { ...entry, stream: 'node', text: LOG_TRUNCATION_TEXT }, ctx.clock.now()));
        truncated = 1;
      } else {
        rows.push(rowOf(runId, { ...entry, text }, ctx.clock.now()));
        storedBytes += bytes;
      }
      lastSeq = Math.max(lastSeq, entry.seq);
    }
    await logs.insert(rows);
    if (rows.length > 0) await logs.update(runId, { stored_bytes: storedBytes, last_seq: lastSeq, truncated });
    return {
      answer: { stored_bytes: storedBytes, truncated: truncated === 1, cancel: run.cancel_requested_at !== null },
      stored: rows.length > 0,
    };
  });
  if (stored) ctx.runEvents.logged(runId);
  return answer;
}

function rowOf(runId: string, entry: LogEntry, now: number): EntryRow {
  const at = Date.parse(entry.at);
  return { run_id: runId, seq: entry.seq, stream: entry.stream, at: Number.isNaN(at) ? now : at, text: entry.text };
}

/** Text both engines keep as it is: PostgreSQL's text holds no NUL, and no half of a surrogate pair. */
function storableText(text: string): string {
  return text.replace(/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\uFFFD');
}

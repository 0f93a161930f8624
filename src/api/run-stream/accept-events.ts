// A batch of a run's events from its node (docs/api.md "Run events"): taken, as its log is (run-logs/accept-logs.ts),
// only from the node and lease that hold the run, or that finished it; stored once per seq, each with the attempt
// that emitted it; the caps counted here too, whatever the node counted: past them nothing more is kept, and the
// answer says so, so that the node stops sending.
import { SvcError } from '../../contract/errors.js';
import {
  MAX_RUN_EVENT_BYTES,
  MAX_RUN_EVENT_BYTES_PER_RUN,
  MAX_RUN_EVENTS_PER_RUN,
  runEventBytes,
  type RunEventBatch,
  type RunEventBatchResponse,
} from '../../contract/run-events.js';
import type { ServiceContext } from '../context.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import type { RunStore } from '../runs/run-store.js';
import { runHeldBy } from '../run-logs/accept-logs.js';
import type { EventEntryRow, EventStore } from './event-store.js';

export async function acceptEventBatch(
  ctx: ServiceContext,
  deps: { runs: RunStore; events: EventStore },
  node: EnrolledNode,
  runId: string,
  batch: RunEventBatch,
): Promise<RunEventBatchResponse> {
  const { runs, events } = deps;
  const oversized = batch.events.find((event) => runEventBytes(event.data) > MAX_RUN_EVENT_BYTES);
  if (oversized !== undefined) {
    throw new SvcError('payload_too_large', `event ${oversized.seq} holds more than ${MAX_RUN_EVENT_BYTES} bytes of data`, {
      remedy: `Send events of at most ${MAX_RUN_EVENT_BYTES / 1024} KiB of data each; put a large output in an artifact.`,
      extensions: { max_bytes: MAX_RUN_EVENT_BYTES },
    });
  }
  const { answer, stored } = await ctx.store.transaction(async () => {
    const run = await runHeldBy(runs, node, runId, batch.lease_id, 'event stream');
    const state = await events.stateForUpdate(runId);
    let { stored_events: count, stored_bytes: bytes, last_seq: lastSeq, truncated } = state;
    const sorted = [...batch.events].sort((a, b) => a.seq - b.seq);
    const known =
      truncated === 1 || sorted.length === 0 ? new Set<number>() : await events.storedSeqs(runId, sorted[0]!.seq, sorted.at(-1)!.seq);
    const rows: EventEntryRow[] = [];
    for (const event of sorted) {
      if (truncated === 1) break;
      if (known.has(event.seq)) continue;
      known.add(event.seq);
      const size = runEventBytes(event.data);
      if (count + 1 > MAX_RUN_EVENTS_PER_RUN || bytes + size > MAX_RUN_EVENT_BYTES_PER_RUN) {
        truncated = 1;
        break;
      }
      const at = Date.parse(event.at);
      rows.push({
        run_id: runId,
        seq: event.seq,
        attempt: event.attempt,
        type: event.type,
        name: event.name ?? null,
        at: Number.isNaN(at) ? ctx.clock.now() : at,
        data_json: JSON.stringify(event.data ?? null),
      });
      count += 1;
      bytes += size;
      lastSeq = Math.max(lastSeq, event.seq);
    }
    await events.insert(rows);
    const changed = rows.length > 0 || truncated !== state.truncated;
    if (changed) await events.update(runId, { stored_events: count, stored_bytes: bytes, last_seq: lastSeq, truncated });
    return {
      answer: { stored_events: count, truncated: truncated === 1, cancel: run.cancel_requested_at !== null },
      stored: rows.length > 0,
    };
  });
  // The followers of a run's log and of its events wait on the same topic.
  if (stored) ctx.runEvents.logged(runId);
  return answer;
}

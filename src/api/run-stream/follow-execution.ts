// A streamed execute (docs/api.md "A streamed execute"): POST /v1/swarm/execute with Accept: text/event-stream
// answers with Server-Sent Events in place of the wait for the final answer: the run as the execute made or found it
// (`run`), its events as they are stored (`run_event`, ids their seqs), and once it finished the run as a 200 answer
// gives it (`result`, the key's stored final answer). The client going away ends the stream, never the run; the same
// Idempotency-Key again streams the same run from its first event, or after the one Last-Event-ID names, and charges
// nothing more, as every replay of a key.
import type { Readable } from 'node:stream';
import { EXECUTE_RESULT_SSE, EXECUTE_RUN_SSE, RUN_EVENT_SSE } from '../../contract/run-events.js';
import type { ServiceContext } from '../context.js';
import { followRun } from '../run-logs/follow-logs.js';
import type { IdempotencyStore } from '../runs/idempotency.js';
import type { RunStore } from '../runs/run-store.js';
import { runView } from '../runs/run-view.js';
import type { EventStore } from './event-store.js';

/** Whether an execute asks for its run's events as a stream. */
export function wantsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);
}

export function followExecution(
  ctx: ServiceContext,
  deps: { runs: RunStore; events: EventStore; keys: IdempotencyStore },
  opening: { run_id: string },
  after: number,
  gone: AbortSignal,
): Readable {
  const runId = opening.run_id;
  return followRun(ctx, runId, after, gone, {
    item: RUN_EVENT_SSE,
    end: EXECUTE_RESULT_SSE,
    opening: { name: EXECUTE_RUN_SSE, data: opening },
    page: (from, limit) => deps.events.page(runId, from, limit),
    position: () => deps.events.position(runId),
    endOf: async () => {
      const stored = await deps.keys.finalAnswer(runId);
      if (stored !== undefined) return JSON.parse(stored) as unknown;
      const run = (await deps.runs.get(runId))!;
      return runView(run, await ctx.ledger.balance(run.user_id));
    },
  });
}

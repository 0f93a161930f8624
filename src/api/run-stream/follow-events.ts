// GET /v1/swarm/runs/{run_id}/events (docs/api.md "Run events"): Server-Sent Events, the follow of a log's
// (run-logs/follow-logs.ts) over the run's events: what is stored first, then each event as it is stored, on
// whichever instance, then one `end` once the run finished. Each event's id is its seq, so an EventSource that
// reconnects with Last-Event-ID goes on without a gap or a repeat.
import type { Readable } from 'node:stream';
import { RUN_EVENT_END_SSE, RUN_EVENT_SSE, type RunEventStreamEnd } from '../../contract/run-events.js';
import type { ServiceContext } from '../context.js';
import { followRun } from '../run-logs/follow-logs.js';
import type { RunStore } from '../runs/run-store.js';
import { runView } from '../runs/run-view.js';
import type { EventStore } from './event-store.js';

export function followEvents(
  ctx: ServiceContext,
  deps: { runs: RunStore; events: EventStore },
  runId: string,
  after: number,
  gone: AbortSignal,
): Readable {
  return followRun(ctx, runId, after, gone, {
    item: RUN_EVENT_SSE,
    end: RUN_EVENT_END_SSE,
    page: (from, limit) => deps.events.page(runId, from, limit),
    position: () => deps.events.position(runId),
    endOf: async (cursor): Promise<RunEventStreamEnd> => {
      const run = (await deps.runs.get(runId))!;
      const state = await deps.events.state(runId);
      return { run_id: runId, status: runView(run, 0).status, truncated: state?.truncated === 1, next_after: cursor };
    },
  });
}

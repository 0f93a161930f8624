// GET /v1/swarm/runs/{run_id}/events (docs/api.md "Run events"): Server-Sent Events, as a log's follow is
// (run-logs/follow-logs.ts): what is stored first, then each event as it is stored, on whichever instance, then one
// `end` once the run finished. Each event's id is its seq, so an EventSource that reconnects with Last-Event-ID goes
// on without a gap or a repeat; a comment every HEARTBEAT_MS keeps proxies from closing a quiet stream.
import type { PassThrough, Readable } from 'node:stream';
import { RUN_EVENT_END_SSE, RUN_EVENT_SSE, type RunEventStreamEnd } from '../../contract/run-events.js';
import type { ServiceContext } from '../context.js';
import { drained, eventOf as sse, followStream, HEARTBEAT_MS } from '../run-logs/follow-logs.js';
import type { RunStore } from '../runs/run-store.js';
import { isFinished, runView } from '../runs/run-view.js';
import type { EventStore } from './event-store.js';

const PAGE = 500;

export function followEvents(
  ctx: ServiceContext,
  deps: { runs: RunStore; events: EventStore },
  runId: string,
  after: number,
  gone: AbortSignal,
): Readable {
  return followStream(ctx, gone, (out, stop) => stream(ctx, deps, runId, after, out, stop));
}

async function stream(
  ctx: ServiceContext,
  deps: { runs: RunStore; events: EventStore },
  runId: string,
  after: number,
  out: PassThrough,
  stop: AbortSignal,
): Promise<void> {
  const { events } = deps;
  let cursor = after;
  const send = async (text: string): Promise<void> => {
    if (!out.write(text)) await drained(out, stop);
  };
  const sendPages = async (): Promise<void> => {
    for (let page = await events.page(runId, cursor, PAGE); page.length > 0; page = await events.page(runId, cursor, PAGE)) {
      for (const event of page) {
        await send(sse(RUN_EVENT_SSE, event, event.seq));
        cursor = event.seq;
      }
      if (stop.aborted) return;
    }
  };
  await send('retry: 2000\n\n');
  while (!stop.aborted) {
    await sendPages();
    const position = await events.position(runId);
    if (position === undefined) return;
    if (isFinished(position)) {
      // A node sends its last events before its result: a run found finished has them all stored.
      await sendPages();
      const run = (await deps.runs.get(runId))!;
      const state = await events.state(runId);
      const end: RunEventStreamEnd = {
        run_id: runId,
        status: runView(run, 0).status,
        truncated: state?.truncated === 1,
        next_after: cursor,
      };
      await send(sse(RUN_EVENT_END_SSE, end));
      return;
    }
    const seen = cursor;
    const news = await ctx.runEvents.waitFor(
      [{ logs: runId }, { run: runId }],
      async () => {
        const now = await events.position(runId);
        return now === undefined || now.lastSeq > seen || isFinished(now) ? true : undefined;
      },
      HEARTBEAT_MS,
      stop,
    );
    if (news === undefined && !stop.aborted) await send(': heartbeat\n\n');
  }
}

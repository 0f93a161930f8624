// GET /v1/swarm/runs/{run_id}/logs?follow=1 (docs/api.md "Run logs"): Server-Sent Events. What is stored comes
// first, then each new entry as it is stored, wherever (on PostgreSQL another instance may take the node's batch:
// its notification wakes this one, and a look at the database every half second catches a lost one), and one `end`
// event once the run finished. A comment line every HEARTBEAT_MS keeps proxies from closing a quiet stream. When the
// service starts to stop the stream ends without `end`: the client reconnects with ?after (or Last-Event-ID).
import { PassThrough, type Readable } from 'node:stream';
import { LOG_END_EVENT, LOG_EVENT, type LogStreamEnd } from '../../contract/jobs.js';
import { linkedSignal } from '../../lib/linked-signal.js';
import type { ServiceContext } from '../context.js';
import type { RunStore } from '../runs/run-store.js';
import { isFinished, runView } from '../runs/run-view.js';
import type { LogStore } from './log-store.js';
import type { Tables } from '../store/tables.js';

/** A comment this often keeps a quiet stream open through proxies (nginx's proxy_read_timeout is 60 s). */
export const HEARTBEAT_MS = 15_000;
/** Entries read from the database at a time. */
const PAGE = 500;

/**
 * Where a follow starts: after the seq `after` names (-1: from the first entry), else after the id of the last event
 * an EventSource that reconnects says it got (an entry's seq), else from the first.
 */
export function followFrom(after: string | undefined, lastEventId: string | string[] | undefined): number {
  if (after !== undefined) return Number(after);
  return typeof lastEventId === 'string' && /^[0-9]{1,10}$/.test(lastEventId) ? Number(lastEventId) : -1;
}

/** The stream to send as the answer; `gone` aborts when the client went away. */
export function followLogs(
  ctx: ServiceContext,
  deps: { runs: RunStore; logs: LogStore },
  runId: string,
  after: number,
  gone: AbortSignal,
): Readable {
  return followRun(ctx, runId, after, gone, {
    item: LOG_EVENT,
    end: LOG_END_EVENT,
    page: (from, limit) => deps.logs.page(runId, from, limit),
    position: () => deps.logs.position(runId),
    endOf: (cursor) => endOf(deps, runId, cursor),
  });
}

/** What a follow of one of a run's streams reads (its log, its events): the stored items by seq, and how it ended. */
export interface FollowSource {
  /** The names of an item's Server-Sent Event and of the last one. */
  item: string;
  end: string;
  /** Up to `limit` items after seq `from`, in order. */
  page(from: number, limit: number): Promise<Array<{ seq: number }>>;
  /** The run's status and the stream's last seq; undefined when there is no such run. */
  position(): Promise<{ status: Tables['runs']['status']; lastSeq: number } | undefined>;
  /** The data of the end, once every item to `cursor` was sent. */
  endOf(cursor: number): Promise<unknown>;
  /** An event sent first, before any item (a streamed execute's run as it started); without an id, so resuming skips it. */
  opening?: { name: string; data: unknown };
}

/**
 * The answer that follows one of a run's streams from seq `after` until the run ended, the client went away or the
 * service drains.
 */
export function followRun(ctx: ServiceContext, runId: string, after: number, gone: AbortSignal, source: FollowSource): Readable {
  const out = new PassThrough();
  // Linked, not AbortSignal.any: the drain lives as long as the process and would keep an entry per follow.
  const stop = linkedSignal([gone, ctx.drainSignal]);
  void stream(ctx, runId, source, after, out, stop.signal)
    .catch((error: unknown) => {
      // The answer is under way: an error can only end it, and the client reconnects with ?after.
      out.destroy(error instanceof Error ? error : new Error(String(error)));
    })
    .finally(() => {
      stop.release();
      if (!out.destroyed) out.end();
    });
  return out;
}

async function stream(
  ctx: ServiceContext,
  runId: string,
  source: FollowSource,
  after: number,
  out: PassThrough,
  stop: AbortSignal,
): Promise<void> {
  let cursor = after;
  const send = async (text: string): Promise<void> => {
    if (!out.write(text)) await drained(out, stop);
  };
  await send(`retry: 2000\n\n`);
  if (source.opening !== undefined) await send(eventOf(source.opening.name, source.opening.data));
  while (!stop.aborted) {
    const page = await source.page(cursor, PAGE);
    for (const item of page) {
      await send(eventOf(source.item, item, item.seq));
      cursor = item.seq;
    }
    if (page.length === PAGE) continue;
    // A node sends the end of a stream before its result (or its batches are refused after): a run found finished
    // has the whole stream stored, and what is left after `cursor` comes in the next pages.
    const position = await source.position();
    if (position === undefined) return;
    if (isFinished(position)) {
      for (let rest = await source.page(cursor, PAGE); rest.length > 0; rest = await source.page(cursor, PAGE)) {
        for (const item of rest) {
          await send(eventOf(source.item, item, item.seq));
          cursor = item.seq;
        }
      }
      await send(eventOf(source.end, await source.endOf(cursor)));
      return;
    }
    const seen = cursor;
    const news = await ctx.runEvents.waitFor(
      [{ logs: runId }, { run: runId }],
      async () => {
        const now = await source.position();
        return now === undefined || now.lastSeq > seen || isFinished(now) ? true : undefined;
      },
      HEARTBEAT_MS,
      stop,
    );
    if (news === undefined && !stop.aborted) await send(': heartbeat\n\n');
  }
}

/** The run as it ended: its status as GET /v1/swarm/runs/{run_id} shows it, and a failure's reason. */
async function endOf(deps: { runs: RunStore; logs: LogStore }, runId: string, cursor: number): Promise<LogStreamEnd> {
  const run = (await deps.runs.get(runId))!;
  const view = runView(run, 0);
  const output = view.output as { error?: unknown } | null;
  const state = await deps.logs.state(runId);
  return {
    run_id: runId,
    status: view.status,
    error: view.status !== 'succeeded' && typeof output?.error === 'string' ? output.error : null,
    truncated: state?.truncated === 1,
    next_after: cursor,
  };
}

/** One event: its name, its data on one line (JSON has no raw newline), its id (the entry's seq: Last-Event-ID). */
function eventOf(name: string, data: unknown, id?: number): string {
  return `event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

function drained(out: PassThrough, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      out.off('drain', done);
      out.off('close', done);
      stop.removeEventListener('abort', done);
      resolve();
    };
    out.once('drain', done);
    out.once('close', done);
    stop.addEventListener('abort', done, { once: true });
  });
}

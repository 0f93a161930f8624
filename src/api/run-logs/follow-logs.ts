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
  return followStream(ctx, gone, (out, stop) => stream(ctx, deps, runId, after, out, stop));
}

/** An answer that `write` fills until it is done, the client went away or the service drains. */
export function followStream(
  ctx: ServiceContext,
  gone: AbortSignal,
  write: (out: PassThrough, stop: AbortSignal) => Promise<void>,
): Readable {
  const out = new PassThrough();
  // Linked, not AbortSignal.any: the drain lives as long as the process and would keep an entry per follow.
  const stop = linkedSignal([gone, ctx.drainSignal]);
  void write(out, stop.signal)
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
  deps: { runs: RunStore; logs: LogStore },
  runId: string,
  after: number,
  out: PassThrough,
  stop: AbortSignal,
): Promise<void> {
  const { logs } = deps;
  let cursor = after;
  const send = async (text: string): Promise<void> => {
    if (!out.write(text)) await drained(out, stop);
  };
  await send(`retry: 2000\n\n`);
  while (!stop.aborted) {
    const page = await logs.page(runId, cursor, PAGE);
    for (const entry of page) {
      await send(eventOf(LOG_EVENT, entry, entry.seq));
      cursor = entry.seq;
    }
    if (page.length === PAGE) continue;
    // A node sends the end of the log before its result (or its batches are refused after): a run found finished
    // has its whole log stored, and what is left after `cursor` comes in the next pages.
    const position = await logs.position(runId);
    if (position === undefined) return;
    if (isFinished(position)) {
      for (let rest = await logs.page(runId, cursor, PAGE); rest.length > 0; rest = await logs.page(runId, cursor, PAGE)) {
        for (const entry of rest) {
          await send(eventOf(LOG_EVENT, entry, entry.seq));
          cursor = entry.seq;
        }
      }
      await send(eventOf(LOG_END_EVENT, await endOf(deps, runId, cursor)));
      return;
    }
    const seen = cursor;
    const news = await ctx.runEvents.waitFor(
      [{ logs: runId }, { run: runId }],
      async () => {
        const now = await logs.position(runId);
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
export function eventOf(name: string, data: unknown, id?: number): string {
  return `event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** Resolves once `out` takes more, closed, or `stop` aborted. */
export function drained(out: PassThrough, stop: AbortSignal): Promise<void> {
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

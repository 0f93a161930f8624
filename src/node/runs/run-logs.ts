// A run's log as its user reads it (docs/api.md "Run logs"): every page of GET /v1/swarm/runs/{run_id}/logs, or the
// log followed live (?follow=1, Server-Sent Events) until the run ends; and its structured events followed alike
// (docs/api.md "Run events"). A follow survives what cuts a long request
// (a proxy's idle timeout, a service restarted, a network gone for a moment): it asks again from the last entry it
// got (?after), and a stream silent for three heartbeats counts as cut.
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser } from 'eventsource-parser';
import { SvcError } from '../../contract/errors.js';
import { LOG_END_EVENT, LOG_EVENT, type LogEntry, type LogStreamEnd, type RunLogs } from '../../contract/jobs.js';
import { RUN_EVENT_END_SSE, RUN_EVENT_SSE, type RunEventServed, type RunEventStreamEnd } from '../../contract/run-events.js';
import type { ServiceClient } from '../service/service-client.js';

/** The service sends a comment every 15 s on a quiet stream; three missed, and the stream is taken for cut. */
export const FOLLOW_IDLE_MS = 45_000;
/** Asking again after a cut: the first wait, doubled up to the most. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MOST_MS = 5_000;
/** Failed asks in a row (each with the client's own retries and deadline) before the follow gives up. */
const MAX_FAILED_ASKS = 3;
const PAGE = 1000;

const pathOf = (runId: string, query: string): string => `/v1/swarm/runs/${encodeURIComponent(runId)}/logs?${query}`;

/** The whole stored log: every page, from the entry after `after`. */
export async function readRunLogs(client: ServiceClient, token: string, runId: string, after = -1): Promise<RunLogs> {
  const entries: LogEntry[] = [];
  let cursor = after;
  for (;;) {
    const page = (
      await client.call<RunLogs>({ method: 'GET', path: pathOf(runId, `after=${cursor}&limit=${PAGE}`), bearer: token, retrySafe: true })
    ).body;
    entries.push(...page.entries);
    cursor = page.next_after;
    if (page.entries.length < PAGE) return { ...page, entries, next_after: cursor };
  }
}

export interface FollowOptions {
  after?: number;
  /** Each entry, once, in order. */
  onEntry: (entry: LogEntry) => void;
  signal: AbortSignal;
  /** How long a silent stream is trusted (tests shorten it). */
  idleMs?: number;
}

/** What a follow reads: the stream's path from a cursor, and the names of its items' events and of its end. */
interface StreamSource {
  path(cursor: number): string;
  item: string;
  end: string;
}

/** Follows the log until the run ends: resolves with how it ended; rejects when the service cannot be reached any more. */
export function followRunLogs(client: ServiceClient, token: string, runId: string, options: FollowOptions): Promise<LogStreamEnd> {
  const source = { path: (cursor: number) => pathOf(runId, `follow=1&after=${cursor}`), item: LOG_EVENT, end: LOG_END_EVENT };
  return followStream<LogEntry, LogStreamEnd>(client, token, source, options);
}

export interface EventFollowOptions extends Omit<FollowOptions, 'onEntry'> {
  /** Each event, once, in order. */
  onEvent: (event: RunEventServed) => void;
}

/** Follows the run's structured events (docs/api.md "Run events") until it ends, as followRunLogs does its log. */
export function followRunEvents(
  client: ServiceClient,
  token: string,
  runId: string,
  options: EventFollowOptions,
): Promise<RunEventStreamEnd> {
  const source = {
    path: (cursor: number) => `/v1/swarm/runs/${encodeURIComponent(runId)}/events?after=${cursor}`,
    item: RUN_EVENT_SSE,
    end: RUN_EVENT_END_SSE,
  };
  return followStream<RunEventServed, RunEventStreamEnd>(client, token, source, { ...options, onEntry: options.onEvent });
}

async function followStream<T extends { seq: number }, End>(
  client: ServiceClient,
  token: string,
  source: StreamSource,
  options: Omit<FollowOptions, 'onEntry'> & { onEntry: (item: T) => void },
): Promise<End> {
  let cursor = options.after ?? -1;
  let failed = 0;
  let waitMs = RECONNECT_FIRST_MS;
  for (;;) {
    let body: Readable;
    try {
      const path = source.path(cursor);
      body = (
        await client.call<Readable>({
          method: 'GET',
          path,
          bearer: token,
          retrySafe: true,
          streamBody: true,
          headers: { accept: 'text/event-stream' },
          signal: options.signal,
        })
      ).body;
    } catch (error) {
      if (
        options.signal.aborted ||
        !(error instanceof SvcError) ||
        !['service_unreachable', 'service_unavailable', 'internal'].includes(error.code)
      )
        throw error;
      failed += 1;
      if (failed >= MAX_FAILED_ASKS) throw error;
      await sleep(waitMs, undefined, { signal: options.signal }).catch(() => undefined);
      waitMs = Math.min(RECONNECT_MOST_MS, waitMs * 2);
      continue;
    }
    const before = cursor;
    const end = await readEvents<T, End>(body, source, options.idleMs ?? FOLLOW_IDLE_MS, options.signal, (entry) => {
      if (entry.seq <= cursor) return;
      cursor = entry.seq;
      options.onEntry(entry);
    });
    if (end !== undefined) return end;
    if (options.signal.aborted) throw new SvcError('interrupted', 'the follow was stopped');
    // Cut without its end: asked again from the last entry. A stream that brought something was a success.
    if (cursor > before) {
      failed = 0;
      waitMs = RECONNECT_FIRST_MS;
    }
    await sleep(waitMs, undefined, { signal: options.signal }).catch(() => undefined);
    waitMs = Math.min(RECONNECT_MOST_MS, waitMs * 2);
  }
}

/** Reads one stream of events: the `end` event's data, or undefined when the stream was cut (or went silent). */
async function readEvents<T, End>(
  body: Readable,
  source: StreamSource,
  idleMs: number,
  signal: AbortSignal,
  onEntry: (entry: T) => void,
): Promise<End | undefined> {
  let end: End | undefined;
  const parser = createParser({
    onEvent: (event) => {
      if (event.event === source.item) onEntry(JSON.parse(event.data) as T);
      else if (event.event === source.end) end = JSON.parse(event.data) as End;
    },
  });
  let idle: NodeJS.Timeout | undefined;
  const watch = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => body.destroy(new Error('the stream went silent')), idleMs);
  };
  const stop = (): void => {
    body.destroy();
  };
  signal.addEventListener('abort', stop, { once: true });
  watch();
  try {
    body.setEncoding('utf8');
    for await (const chunk of body as AsyncIterable<string>) {
      watch();
      parser.feed(chunk);
      if (end !== undefined) break;
    }
  } catch {
    // Cut (a proxy, a restart, silence): the caller asks again from where it is.
  } finally {
    clearTimeout(idle);
    signal.removeEventListener('abort', stop);
    body.destroy();
  }
  return end;
}

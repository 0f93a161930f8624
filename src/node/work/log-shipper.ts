// A run's log, shipped to the service while the agent works (docs/api.md "Run logs"). The agent's stdout and stderr
// become lines (./log-lines.ts), each an entry with its place in the log (seq, from 0), so that a batch sent again
// (its answer was lost) is stored once. Entries go in batches: after about a second, or at once when enough are
// waiting, one batch in flight at a time. The run's log is bounded: past MAX_LOG_BYTES_PER_RUN one truncation
// marker, then nothing. A batch that fails is sent again with the run's lease, later; a 409 lease_lost (the run is
// not this node's any more) or a 404 ends the shipping. The service's answer says when the run's user cancelled it.
import { SvcError } from '../../contract/errors.js';
import type { LogBatch, LogBatchResponse, LogEntry, LogStream } from '../../contract/jobs.js';
import {
  LOG_TRUNCATION_TEXT,
  MAX_LOG_BATCH_BYTES,
  MAX_LOG_BATCH_ENTRIES,
  MAX_LOG_BYTES_PER_RUN,
  logTextBytes,
} from '../../contract/run-log-limits.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import { LineAssembler, type OutputStream } from './log-lines.js';

export interface LogShipperOptions {
  leaseId: string;
  /** Sends one batch of the run's log (NodeApi.postLogs); `signal` gives it up. */
  send: (batch: LogBatch, signal: AbortSignal) => Promise<LogBatchResponse>;
  clock: Clock;
  /**
   * What each line becomes before it is counted and sent: where the run's secret values are hidden. The identity
   * unless given.
   */
  redact?: (text: string) => string;
  /** Called once, when the service says the run's user asked to cancel it. */
  onCancel?: () => void;
  /** How long an entry may wait for its batch. */
  flushMs?: number;
}

/** What became of the run's log, once closed. */
export interface LogShipping {
  /** Entries made (the truncation marker included). */
  entries: number;
  /** Entries the service acknowledged. */
  sent: number;
  truncated: boolean;
  /** Why shipping ended early: the run is not this node's any more, or the bound of close() passed with entries unsent. */
  stoppedBy: 'lease_lost' | 'deadline' | undefined;
}

/** An entry waits at most this long for its batch. */
export const LOG_FLUSH_MS = 1_000;
/** Entries of this many bytes (as JSON) waiting are sent at once, without waiting for the second to pass. */
const FLUSH_NOW_BYTES = 64 * 1024;
/** Room in a batch's body for what is not its entries ({"lease_id": …, "entries": [ ]}). */
const BATCH_ENVELOPE_BYTES = 256;
/** After a batch failed: the first wait before it is sent again, doubled up to the most. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MOST_MS = 30_000;

interface Queued {
  entry: LogEntry;
  /** Its size as JSON in a batch's body, with the comma. */
  jsonBytes: number;
}

export class LogShipper {
  readonly #options: LogShipperOptions;
  readonly #redact: (text: string) => string;
  readonly #lines: Record<OutputStream, LineAssembler>;
  readonly #cancelled = new AbortController();
  /** Aborted when close()'s bound passed: the batch in flight is given up. */
  readonly #giveUp = new AbortController();
  readonly #queue: Queued[] = [];
  #queuedBytes = 0;
  #nextSeq = 0;
  #countedBytes = 0;
  #truncated = false;
  #sent = 0;
  /** The run is not this node's any more (or not its user's): nothing more is sent. */
  #leaseLost = false;
  #sending: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #retryMs: number | undefined;
  #closed = false;

  constructor(options: LogShipperOptions) {
    this.#options = options;
    this.#redact = options.redact ?? ((text) => text);
    this.#lines = {
      stdout: new LineAssembler((text) => this.#add('stdout', text)),
      stderr: new LineAssembler((text) => this.#add('stderr', text)),
    };
  }

  /** Aborted once the service said the run's user cancelled it. */
  get cancelled(): AbortSignal {
    return this.#cancelled.signal;
  }

  /** Bytes the agent wrote on one of its streams, as they came. */
  write(stream: OutputStream, chunk: Buffer): void {
    if (this.#closed) return;
    this.#lines[stream].write(chunk);
  }

  /**
   * The agent ended: its last lines are made, and what is still unsent goes now, within `boundMs` (a service that
   * does not answer must not hold the run's result for long). Resolves once all is sent, or the bound passed.
   */
  async close(boundMs: number): Promise<LogShipping> {
    if (!this.#closed) {
      this.#lines.stdout.end();
      this.#lines.stderr.end();
      this.#closed = true;
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const bound = setTimeout(() => this.#giveUp.abort(), boundMs);
    try {
      while (this.#queue.length > 0 && !this.#leaseLost && !this.#giveUp.signal.aborted) {
        await (this.#sending ?? this.#sendNext());
        if (this.#queue.length > 0 && this.#retryMs !== undefined) await abortableWait(this.#retryMs, this.#giveUp.signal);
      }
    } finally {
      clearTimeout(bound);
    }
    const unsent = this.#queue.length > 0;
    this.#giveUp.abort();
    return {
      entries: this.#nextSeq,
      sent: this.#sent,
      truncated: this.#truncated,
      stoppedBy: this.#leaseLost ? 'lease_lost' : unsent ? 'deadline' : undefined,
    };
  }

  #add(stream: LogStream, line: string): void {
    if (this.#truncated || this.#leaseLost) return;
    const text = this.#redact(line);
    const bytes = logTextBytes(text);
    if (this.#countedBytes + bytes > MAX_LOG_BYTES_PER_RUN) {
      this.#truncated = true;
      this.#enqueue('node', LOG_TRUNCATION_TEXT);
    } else {
      this.#countedBytes += bytes;
      this.#enqueue(stream, text);
    }
  }

  #enqueue(stream: LogStream, text: string): void {
    const entry: LogEntry = { seq: this.#nextSeq, stream, at: isoTime(this.#options.clock.now()), text };
    this.#nextSeq += 1;
    const jsonBytes = Buffer.byteLength(JSON.stringify(entry)) + 1;
    this.#queue.push({ entry, jsonBytes });
    this.#queuedBytes += jsonBytes;
    this.#schedule();
  }

  /** The next batch goes after the flush time, or at once when enough waits; one batch in flight at a time. */
  #schedule(): void {
    if (this.#closed || this.#sending !== undefined || this.#retryMs !== undefined) return;
    if (this.#queuedBytes >= FLUSH_NOW_BYTES || this.#queue.length >= MAX_LOG_BATCH_ENTRIES) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#sendNext();
    } else {
      this.#timer ??= this.#later(this.#options.flushMs ?? LOG_FLUSH_MS);
    }
  }

  #later(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#sending === undefined && !this.#closed) void this.#sendNext();
    }, ms);
    timer.unref();
    return timer;
  }

  /** Sends the oldest entries as one batch; on success they leave the queue, on failure they wait for a retry. */
  #sendNext(): Promise<void> {
    const sending = this.#sendBatch().finally(() => {
      this.#sending = undefined;
      if (this.#closed) return;
      if (this.#retryMs !== undefined) this.#timer ??= this.#later(this.#retryMs);
      else if (this.#queue.length > 0) this.#schedule();
    });
    this.#sending = sending;
    return sending;
  }

  async #sendBatch(): Promise<void> {
    const batch = this.#nextBatch();
    if (batch.length === 0) return;
    try {
      const answer = await this.#options.send(
        { lease_id: this.#options.leaseId, entries: batch.map((queued) => queued.entry) },
        this.#giveUp.signal,
      );
      this.#retryMs = undefined;
      this.#acknowledge(batch.length);
      if (answer.truncated) this.#serviceTruncated();
      if (answer.cancel && !this.#cancelled.signal.aborted) {
        this.#cancelled.abort();
        this.#options.onCancel?.();
      }
    } catch (error) {
      if (error instanceof SvcError && (error.code === 'lease_lost' || error.code === 'run_not_found')) {
        this.#leaseLost = true;
        this.#dropQueue();
      } else if (error instanceof SvcError && error.status >= 400 && error.status < 500 && error.status !== 429 && error.status !== 408) {
        // The service refuses this batch as it is (a bug of ours, not the network's): sending it again changes nothing.
        this.#acknowledge(batch.length, false);
      } else {
        this.#retryMs = Math.min(RETRY_MOST_MS, this.#retryMs === undefined ? RETRY_FIRST_MS : this.#retryMs * 2);
      }
    }
  }

  /** The oldest entries that fit in one batch's body and count. */
  #nextBatch(): Queued[] {
    let bytes = BATCH_ENVELOPE_BYTES;
    let count = 0;
    while (count < this.#queue.length && count < MAX_LOG_BATCH_ENTRIES && bytes + this.#queue[count]!.jsonBytes <= MAX_LOG_BATCH_BYTES) {
      bytes += this.#queue[count]!.jsonBytes;
      count += 1;
    }
    return this.#queue.slice(0, count);
  }

  #acknowledge(count: number, stored = true): void {
    for (const queued of this.#queue.splice(0, count)) this.#queuedBytes -= queued.jsonBytes;
    if (stored) this.#sent += count;
  }

  /** The service stores nothing more of this log: what waits is dropped, and nothing more is made. */
  #serviceTruncated(): void {
    this.#truncated = true;
    this.#dropQueue();
  }

  #dropQueue(): void {
    this.#queue.length = 0;
    this.#queuedBytes = 0;
  }
}

function abortableWait(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

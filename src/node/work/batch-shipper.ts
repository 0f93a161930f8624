// What a run sends the service while it works, in batches (its log, ./log-shipper.ts; its events, ./event-shipper.ts):
// entries numbered by the caller (seq), so that a batch sent again (its answer was lost) is stored once. They go
// after about a second, or at once when enough are waiting, one batch in flight at a time. A batch that fails is
// sent again, later; a 409 lease_lost (the run is not this node's any more) or a 404 ends the shipping. The service's
// answer says when it keeps nothing more of the run's entries (truncated) and when the run's user cancelled it.
import { SvcError } from '../../contract/errors.js';

export interface BatchAnswer {
  truncated: boolean;
  cancel: boolean;
}

export interface BatchShipperOptions<Entry> {
  /** Sends one batch of the run's entries; `signal` gives it up. */
  send: (entries: Entry[], signal: AbortSignal) => Promise<BatchAnswer>;
  /** Called once, when the service says the run's user asked to cancel it. */
  onCancel?: () => void;
  /** How long an entry may wait for its batch. */
  flushMs?: number;
  maxBatchEntries: number;
  maxBatchBytes: number;
}

/** What became of the entries, once closed. */
export interface BatchShipping {
  /** Entries the service acknowledged. */
  sent: number;
  /** Why shipping ended early: the run is not this node's any more, or the bound of close() passed with entries unsent. */
  stoppedBy: 'lease_lost' | 'deadline' | undefined;
}

/** An entry waits at most this long for its batch. */
export const BATCH_FLUSH_MS = 1_000;
/** Entries of this many bytes (as JSON) waiting are sent at once, without waiting for the second to pass. */
const FLUSH_NOW_BYTES = 64 * 1024;
/** Room in a batch's body for what is not its entries ({"lease_id": …, "entries": [ ]}). */
const BATCH_ENVELOPE_BYTES = 256;
/** After a batch failed: the first wait before it is sent again, doubled up to the most. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MOST_MS = 30_000;

interface Queued<Entry> {
  entry: Entry;
  /** Its size as JSON in a batch's body, with the comma. */
  jsonBytes: number;
}

export class BatchShipper<Entry> {
  readonly #options: BatchShipperOptions<Entry>;
  readonly #cancelled = new AbortController();
  /** Aborted when close()'s bound passed: the batch in flight is given up. */
  readonly #giveUp = new AbortController();
  readonly #queue: Queued<Entry>[] = [];
  #queuedBytes = 0;
  #sent = 0;
  /** The service keeps nothing more of these entries. */
  #truncated = false;
  /** The run is not this node's any more (or not its user's): nothing more is sent. */
  #leaseLost = false;
  #sending: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #retryMs: number | undefined;
  #closed = false;

  constructor(options: BatchShipperOptions<Entry>) {
    this.#options = options;
  }

  /** Aborted once the service said the run's user cancelled it. */
  get cancelled(): AbortSignal {
    return this.#cancelled.signal;
  }

  /** The service said it keeps nothing more, or the run is not this node's: what is added is dropped. */
  get stopped(): boolean {
    return this.#truncated || this.#leaseLost;
  }

  get truncatedByService(): boolean {
    return this.#truncated;
  }

  add(entry: Entry): void {
    if (this.#closed || this.stopped) return;
    const jsonBytes = Buffer.byteLength(JSON.stringify(entry)) + 1;
    this.#queue.push({ entry, jsonBytes });
    this.#queuedBytes += jsonBytes;
    this.#schedule();
  }

  /**
   * What is still unsent goes now, within `boundMs` (a service that does not answer must not hold the run's result
   * for long). Resolves once all is sent, or the bound passed.
   */
  async close(boundMs: number): Promise<BatchShipping> {
    this.#closed = true;
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
    return { sent: this.#sent, stoppedBy: this.#leaseLost ? 'lease_lost' : unsent ? 'deadline' : undefined };
  }

  /** The next batch goes after the flush time, or at once when enough waits; one batch in flight at a time. */
  #schedule(): void {
    if (this.#closed || this.#sending !== undefined || this.#retryMs !== undefined) return;
    if (this.#queuedBytes >= FLUSH_NOW_BYTES || this.#queue.length >= this.#options.maxBatchEntries) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#sendNext();
    } else {
      this.#timer ??= this.#later(this.#options.flushMs ?? BATCH_FLUSH_MS);
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
        batch.map((queued) => queued.entry),
        this.#giveUp.signal,
      );
      this.#retryMs = undefined;
      this.#acknowledge(batch.length);
      if (answer.truncated) {
        // The service stores nothing more of these: what waits is dropped, and nothing more is made.
        this.#truncated = true;
        this.#dropQueue();
      }
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
  #nextBatch(): Queued<Entry>[] {
    let bytes = BATCH_ENVELOPE_BYTES;
    let count = 0;
    const { maxBatchEntries, maxBatchBytes } = this.#options;
    while (count < this.#queue.length && count < maxBatchEntries && bytes + this.#queue[count]!.jsonBytes <= maxBatchBytes) {
      bytes += this.#queue[count]!.jsonBytes;
      count += 1;
    }
    return this.#queue.slice(0, count);
  }

  #acknowledge(count: number, stored = true): void {
    for (const queued of this.#queue.splice(0, count)) this.#queuedBytes -= queued.jsonBytes;
    if (stored) this.#sent += count;
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

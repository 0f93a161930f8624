// A run's log, shipped to the service while the agent works (docs/api.md "Run logs"). The agent's stdout and stderr
// become lines (./log-lines.ts), each an entry with its place in the log (seq, from 0), sent in batches with the
// run's lease (./batch-shipper.ts). The run's log is bounded: past MAX_LOG_BYTES_PER_RUN one truncation marker, then
// nothing. The service's answer says when the run's user cancelled it.
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
import { BatchShipper, BATCH_FLUSH_MS } from './batch-shipper.js';

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
export const LOG_FLUSH_MS = BATCH_FLUSH_MS;

export class LogShipper {
  readonly #options: LogShipperOptions;
  readonly #redact: (text: string) => string;
  readonly #lines: Record<OutputStream, LineAssembler>;
  readonly #batches: BatchShipper<LogEntry>;
  #nextSeq = 0;
  #countedBytes = 0;
  #truncated = false;
  #closed = false;

  constructor(options: LogShipperOptions) {
    this.#options = options;
    this.#redact = options.redact ?? ((text) => text);
    this.#lines = {
      stdout: new LineAssembler((text) => this.#add('stdout', text)),
      stderr: new LineAssembler((text) => this.#add('stderr', text)),
    };
    this.#batches = new BatchShipper<LogEntry>({
      send: (entries, signal) => options.send({ lease_id: options.leaseId, entries }, signal),
      ...(options.onCancel === undefined ? {} : { onCancel: options.onCancel }),
      ...(options.flushMs === undefined ? {} : { flushMs: options.flushMs }),
      maxBatchEntries: MAX_LOG_BATCH_ENTRIES,
      maxBatchBytes: MAX_LOG_BATCH_BYTES,
    });
  }

  /** Aborted once the service said the run's user cancelled it. */
  get cancelled(): AbortSignal {
    return this.#batches.cancelled;
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
    const shipping = await this.#batches.close(boundMs);
    return { entries: this.#nextSeq, ...shipping, truncated: this.#truncated || this.#batches.truncatedByService };
  }

  #add(stream: LogStream, line: string): void {
    if (this.#truncated || this.#batches.stopped) return;
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
    this.#batches.add({ seq: this.#nextSeq, stream, at: isoTime(this.#options.clock.now()), text });
    this.#nextSeq += 1;
  }
}

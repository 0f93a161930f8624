// A run's events, shipped to the service as the agent emits them on its kit channel (docs/api.md "Run events"):
// each redacted of the run's secrets before it leaves the node, numbered, and sent in batches with the run's lease
// (./batch-shipper.ts), never more than the service keeps of a run (its count and bytes), so a run that emits fast
// to a service that is slow holds at most that much here. An attempt numbers its events from (attempt − 1) ×
// ATTEMPT_SEQ_SPAN, so that a retry's events follow its predecessor's and none is taken for a repeat of another's;
// the kit's channel caps an attempt below the span (MAX_RUN_EVENTS_PER_RUN).
import { isoTime, type Clock } from '../../lib/clock.js';
import { redactJson, type Redact } from '../../lib/redact.js';
import {
  MAX_RUN_EVENT_BATCH_BYTES,
  MAX_RUN_EVENT_BATCH_ENTRIES,
  MAX_RUN_EVENT_BYTES_PER_RUN,
  MAX_RUN_EVENTS_PER_RUN,
  runEventBytes,
  type RunEventBatch,
  type RunEventBatchResponse,
  type RunEventEntry,
} from '../../contract/run-events.js';
import type { KitEvent } from '../runner/kit-channel.js';
import { BatchShipper, type BatchShipping } from './batch-shipper.js';

/** The seqs one attempt may use. */
export const ATTEMPT_SEQ_SPAN = 10_000_000;

export interface EventShipperOptions {
  leaseId: string;
  attempt: number;
  /** Sends one batch of the run's events (NodeApi.postRunEvents); `signal` gives it up. */
  send: (batch: RunEventBatch, signal: AbortSignal) => Promise<RunEventBatchResponse>;
  /** Where the run's secret values are hidden, in every string of an event's data. */
  redact: Redact;
  clock?: Clock;
  onCancel?: () => void;
  flushMs?: number;
}

export class EventShipper {
  readonly #options: EventShipperOptions;
  readonly #batches: BatchShipper<RunEventEntry>;
  #emitted = 0;
  /** The data's bytes emitted: past the service's cap a run keeps no more, so the node holds and sends no more. */
  #bytes = 0;

  constructor(options: EventShipperOptions) {
    this.#options = options;
    this.#batches = new BatchShipper<RunEventEntry>({
      send: (events, signal) => options.send({ lease_id: options.leaseId, events }, signal),
      ...(options.onCancel === undefined ? {} : { onCancel: options.onCancel }),
      ...(options.flushMs === undefined ? {} : { flushMs: options.flushMs }),
      maxBatchEntries: MAX_RUN_EVENT_BATCH_ENTRIES,
      maxBatchBytes: MAX_RUN_EVENT_BATCH_BYTES,
    });
  }

  emit(event: KitEvent): void {
    if (this.#emitted >= MAX_RUN_EVENTS_PER_RUN) return;
    const data = redactJson(event.data, this.#options.redact);
    const bytes = runEventBytes(data);
    if (this.#bytes + bytes > MAX_RUN_EVENT_BYTES_PER_RUN) return;
    this.#bytes += bytes;
    const seq = (this.#options.attempt - 1) * ATTEMPT_SEQ_SPAN + this.#emitted;
    this.#emitted += 1;
    this.#batches.add({
      seq,
      attempt: this.#options.attempt,
      type: event.type,
      ...(event.name === undefined ? {} : { name: event.name }),
      at: isoTime(event.at),
      data,
    });
  }

  /** The agent ended: what is unsent goes within `boundMs`. */
  close(boundMs: number): Promise<BatchShipping> {
    return this.#batches.close(boundMs);
  }
}

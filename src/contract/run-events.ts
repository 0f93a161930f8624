// A run's structured events (docs/api.md "Run events"): what an agent emits through the kit's channel beside its log,
// as the node sends them to the service and the service keeps and streams them. The node and the service count the
// caps alike; plain values and one TypeBox schema, apart from the log's (./run-log-limits.ts).
import { Type, type Static } from '@sinclair/typebox';

/** The kinds of event a run emits: a progress figure, a partial output, a model's tokens, or the agent's own. */
export const RUN_EVENT_TYPES = ['progress', 'output', 'tokens', 'custom'] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** One event's `data` as JSON text at most: past it, the kit's call is refused with `kit_message_too_large`. */
export const MAX_RUN_EVENT_BYTES = 64 * 1024;
/** What one run keeps of its events (their JSON text together); past it, one `truncated` mark and nothing more. */
export const MAX_RUN_EVENT_BYTES_PER_RUN = 4 * 1024 * 1024;
/** The most events one run keeps; the kit is refused with `kit_limit_reached` past it. */
export const MAX_RUN_EVENTS_PER_RUN = 10_000;
/** A batch of events (POST /v1/swarm/runs/{run_id}/events) at most, in entries and in body bytes. */
export const MAX_RUN_EVENT_BATCH_ENTRIES = 500;
export const MAX_RUN_EVENT_BATCH_BYTES = 1024 * 1024;

/** The bytes an event counts against the caps: its `data` as JSON text, UTF-8. */
export function runEventBytes(data: unknown): number {
  return Buffer.byteLength(JSON.stringify(data ?? null), 'utf8');
}

const strict = { additionalProperties: false } as const;

/** A `custom` event's name, as the kit's channel checks it and the service's schema does (1-64 characters). */
export const RUN_EVENT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$';

// POST /v1/swarm/runs/{run_id}/events (node)
export const RunEventEntry = Type.Object(
  {
    /** The event's place in the run's events, from 0 across attempts; a repeat of a seq already stored is ignored. */
    seq: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
    /** The attempt that emitted it (1 for the first). */
    attempt: Type.Integer({ minimum: 1, maximum: 100 }),
    type: Type.Union(RUN_EVENT_TYPES.map((type) => Type.Literal(type))),
    /** For `custom`: the agent's name for it. */
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: RUN_EVENT_NAME_PATTERN })),
    at: Type.String({ description: 'ISO 8601, UTC' }),
    /** Any JSON value, redacted by the node before it left (docs/operations.md "Secrets"). */
    data: Type.Unknown(),
  },
  strict,
);
export type RunEventEntry = Static<typeof RunEventEntry>;

export const RunEventBatch = Type.Object(
  {
    lease_id: Type.String({ minLength: 1, maxLength: 64 }),
    events: Type.Array(RunEventEntry, { maxItems: MAX_RUN_EVENT_BATCH_ENTRIES }),
  },
  strict,
);
export type RunEventBatch = Static<typeof RunEventBatch>;

export const RunEventBatchResponse = Type.Object({
  /** The events stored so far for the run. */
  stored_events: Type.Integer(),
  /** The run's events reached a cap: nothing more is stored; the node stops sending. */
  truncated: Type.Boolean(),
  /** The run's user asked to cancel it (as a log batch's answer says). */
  cancel: Type.Boolean(),
});
export type RunEventBatchResponse = Static<typeof RunEventBatchResponse>;

/** The names of the Server-Sent Events of GET /v1/swarm/runs/{run_id}/events: one per event, and one at the end. */
export const RUN_EVENT_SSE = 'run_event';
export const RUN_EVENT_END_SSE = 'end';
/**
 * A streamed execute's (POST /v1/swarm/execute with Accept: text/event-stream): the run as the execute made or found
 * it, first; its events as run_event; the run as a 200 answer gives it, last.
 */
export const EXECUTE_RUN_SSE = 'run';
export const EXECUTE_RESULT_SSE = 'result';

/** An event as served: its entry as the node sent it, `data` as stored. */
export interface RunEventServed {
  seq: number;
  attempt: number;
  type: RunEventType;
  name: string | null;
  at: string;
  data: unknown;
}

/** The last Server-Sent Event of a follow: the run ended, and every event it kept was sent. */
export interface RunEventStreamEnd {
  run_id: string;
  status: string;
  truncated: boolean;
  next_after: number;
}

// A run as a job (docs/api.md "Runs as jobs"): its time limit, queue, retries, logs, artifacts, cancel and history.
// The limits both programs read, and the shapes of the endpoints the service serves for them.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_LOG_BATCH_ENTRIES, MAX_LOG_LINE_CHARS } from './run-log-limits.js';

/** The longest time limit an agent may declare (agent.json timeout_seconds): GitHub's 6 hours a job. */
export const MAX_RUN_SECONDS = 6 * 60 * 60;
/** An agent that declares none gets this, today's limit before time limits were the agent's. */
export const DEFAULT_RUN_SECONDS = 30;
/** How long a run may wait for a node when execute names no queue_seconds. */
export const DEFAULT_QUEUE_SECONDS = 10 * 60;
/** The longest a run may wait for a node (GitHub queues a job for 24 h). */
export const MAX_QUEUE_SECONDS = 24 * 60 * 60;
/** A retry-safe run is tried at most this often in all when its node is lost or restarts mid-run. */
export const MAX_RUN_ATTEMPTS = 3;

// The log's bounds and the retention of a run's data: ./run-log-limits.ts (no TypeBox there, for the CLI's help).
export { MAX_LOG_BYTES_PER_RUN, MAX_LOG_LINE_CHARS, RUN_DATA_RETENTION_DAYS } from './run-log-limits.js';

/** One artifact's bytes, a run's artifacts together, and a user's artifacts kept at once. */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
export const MAX_ARTIFACT_BYTES_PER_RUN = 128 * 1024 * 1024;
export const MAX_ARTIFACTS_PER_RUN = 100;
export const MAX_ARTIFACT_BYTES_PER_USER = 1024 * 1024 * 1024;
/** An artifact's name: a plain file name (no directory), as a browser and a shell take it safely. */
export const ARTIFACT_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';

export const LOG_STREAMS = ['stdout', 'stderr', 'node'] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;

// POST /v1/swarm/runs/{run_id}/logs (node)
export const LogEntry = Type.Object(
  {
    /** The entry's place in the run's log, from 0; a repeat of a seq already stored is ignored. */
    seq: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
    stream: Type.Union(LOG_STREAMS.map((stream) => Type.Literal(stream))),
    at: Timestamp,
    text: Type.String({ maxLength: MAX_LOG_LINE_CHARS + 64 }),
  },
  strict,
);
export type LogEntry = Static<typeof LogEntry>;
export const LogBatch = Type.Object(
  { lease_id: Type.String({ minLength: 1, maxLength: 64 }), entries: Type.Array(LogEntry, { maxItems: MAX_LOG_BATCH_ENTRIES }) },
  strict,
);
export type LogBatch = Static<typeof LogBatch>;
export const LogBatchResponse = Type.Object({
  /** The bytes of the run's log stored so far (entries' text, UTF-8). */
  stored_bytes: Type.Integer(),
  /** The log reached its cap: nothing more is stored; the node may stop sending. */
  truncated: Type.Boolean(),
  /** The run's user asked to cancel it: the node stops the agent (the run ends `cancelled`). */
  cancel: Type.Boolean(),
});
export type LogBatchResponse = Static<typeof LogBatchResponse>;

// GET /v1/swarm/runs/{run_id}/logs
export const RunLogs = Type.Object({
  run_id: Type.String(),
  entries: Type.Array(LogEntry),
  /** The log was longer than MAX_LOG_BYTES_PER_RUN: its end is not kept. */
  truncated: Type.Boolean(),
  /** The run ended: no entry will come after these. */
  finished: Type.Boolean(),
  /** The run's status as GET /v1/swarm/runs/{run_id} shows it. */
  status: Type.String(),
  /** Ask again with ?after=<next_after> for what comes next (-1: nothing yet). */
  next_after: Type.Integer(),
  /** When the stored log is removed (RUN_DATA_RETENTION_DAYS after the run ended); null while it runs. */
  expires_at: Type.Union([Timestamp, Type.Null()]),
  /** Its entries were removed, past RUN_DATA_RETENTION_DAYS. */
  expired: Type.Boolean(),
});
export type RunLogs = Static<typeof RunLogs>;

/** The events of GET …/logs?follow=1 (text/event-stream): `log` each entry (its seq as the event id), then one `end`. */
export const LOG_EVENT = 'log';
export const LOG_END_EVENT = 'end';
/** The `end` event's data: the run finished, and the log with it. */
export const LogStreamEnd = Type.Object({
  run_id: Type.String(),
  status: Type.String(),
  /** A failed run's output.error (timeout, exit, cancelled…); null when it succeeded. */
  error: Type.Union([Type.String(), Type.Null()]),
  truncated: Type.Boolean(),
  next_after: Type.Integer(),
});
export type LogStreamEnd = Static<typeof LogStreamEnd>;

// Artifacts
export const ArtifactView = Type.Object({
  name: Type.String(),
  size_bytes: Type.Integer(),
  sha256: Type.String(),
  content_type: Type.String(),
  created_at: Timestamp,
  /** Where it downloads (GET, with the same credential). */
  url: Type.String(),
});
export type ArtifactView = Static<typeof ArtifactView>;
export const RunArtifacts = Type.Object({ run_id: Type.String(), artifacts: Type.Array(ArtifactView), expires_at: Type.Union([Timestamp, Type.Null()]) });
export type RunArtifacts = Static<typeof RunArtifacts>;

// A run's attempts (GET /v1/swarm/runs/{run_id})
export const RunAttempt = Type.Object({
  attempt: Type.Integer(),
  node_id: Type.Union([Type.String(), Type.Null()]),
  started_at: Type.Union([Timestamp, Type.Null()]),
  ended_at: Type.Union([Timestamp, Type.Null()]),
  /** succeeded, failed, cancelled, or why it was tried again: node_lost, interrupted. */
  outcome: Type.Union([Type.String(), Type.Null()]),
});
export type RunAttempt = Static<typeof RunAttempt>;

// A run as a job (docs/api.md "Runs as jobs"): its time limit, queue, retries, logs, artifacts, cancel and history.
// The limits both programs read, and the shapes of the endpoints the service serves for them.
import { Type, type Static } from '@sinclair/typebox';
import { DEFAULT_RUNS_PAGE, MAX_RUNS_PAGE } from './job-limits.js';
import { PageLimit } from './page-limit.js';
import { RUN_TRIGGERS } from './run-trigger.js';
import { MAX_LOG_BATCH_ENTRIES, MAX_LOG_LINE_CHARS } from './run-log-limits.js';

export {
  DEFAULT_QUEUE_SECONDS,
  DEFAULT_RUN_SECONDS,
  DEFAULT_RUNS_PAGE,
  MAX_QUEUE_SECONDS,
  MAX_RUN_ATTEMPTS,
  MAX_RUN_SECONDS,
  MAX_RUNS_PAGE,
} from './job-limits.js';

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
export const RunArtifacts = Type.Object({
  run_id: Type.String(),
  artifacts: Type.Array(ArtifactView),
  expires_at: Type.Union([Timestamp, Type.Null()]),
});
export type RunArtifacts = Static<typeof RunArtifacts>;

// A run's attempts (GET /v1/swarm/runs/{run_id}): every attempt, the one under way (or the last) included.
export const RunAttempt = Type.Object({
  attempt: Type.Integer(),
  node_id: Type.Union([Type.String(), Type.Null()]),
  started_at: Type.Union([Timestamp, Type.Null()]),
  ended_at: Type.Union([Timestamp, Type.Null()]),
  /** How it ended: succeeded, failed, cancelled, or why the run was tried again (node_lost, interrupted); null while it runs. */
  outcome: Type.Union([Type.String(), Type.Null()]),
  message: Type.Optional(Type.String()),
});
export type RunAttempt = Static<typeof RunAttempt>;

// GET /v1/swarm/runs: the query (text, as every query string: never coerced)
export const RunListQuery = Type.Object(
  {
    agent_id: Type.Optional(Type.String({ maxLength: 128 })),
    status: Type.Optional(Type.Union(['queued', 'running', 'succeeded', 'failed', 'cancelled'].map((status) => Type.Literal(status)))),
    node_id: Type.Optional(Type.String({ maxLength: 64 })),
    /** Runs started at or after this time (ISO 8601), and before `until`. */
    since: Type.Optional(Type.String({ maxLength: 40 })),
    until: Type.Optional(Type.String({ maxLength: 40 })),
    limit: PageLimit(MAX_RUNS_PAGE, DEFAULT_RUNS_PAGE),
    /** next_cursor of the page before. */
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
  },
  strict,
);
export type RunListQuery = Static<typeof RunListQuery>;

/** A run as the history lists it: without its output (GET /v1/swarm/runs/{run_id} has it), with why it failed. */
/** An addition to run responses (docs/api.md "Triggers"): absent for a run started before the service recorded it. */
export const RunTriggerField = Type.Optional(Type.Union(RUN_TRIGGERS.map((trigger) => Type.Literal(trigger))));

export const RunSummary = Type.Object({
  run_id: Type.String(),
  agent_id: Type.String(),
  status: Type.String(),
  charged_cents: Type.Integer(),
  started_at: Timestamp,
  /** When a node took it (its attempt's start): the queue wait is claimed_at − started_at; null while it waits. */
  claimed_at: Type.Union([Timestamp, Type.Null()]),
  finished_at: Type.Union([Timestamp, Type.Null()]),
  node_id: Type.Union([Type.String(), Type.Null()]),
  attempt: Type.Integer(),
  /** A failed or cancelled run's reason ({error, message}); null otherwise. */
  error: Type.Union([Type.Object({ error: Type.String(), message: Type.String() }), Type.Null()]),
  /** What started it (docs/api.md "Triggers"); absent for a run from before it was recorded. */
  trigger: RunTriggerField,
});
export type RunSummary = Static<typeof RunSummary>;
export const RunList = Type.Object({
  runs: Type.Array(RunSummary),
  /** Ask again with ?cursor=<next_cursor> (and the same filters) for older runs; null: there are none. */
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
export type RunList = Static<typeof RunList>;

/** Where a run's logs and artifacts are (GET, with the same credential). */
export const RunLinks = Type.Object({ logs: Type.String(), artifacts: Type.String() });

// POST /v1/swarm/runs/by-key (Idempotency-Key header): finds the key's run, or settles the key as never run.
export const KeySettlement = Type.Object({
  idempotency_key: Type.String(),
  /** found: the run below is the key's; never_ran: no run had it, and from now on none will (execute answers 409). */
  settled: Type.Union([Type.Literal('found'), Type.Literal('never_ran')]),
  // The run as execute answers it (RunResponse, which imports this file): any object, each of its members kept.
  run: Type.Union([Type.Object({}, { additionalProperties: true, description: 'The run, as execute answers it' }), Type.Null()]),
});
export type KeySettlement = Static<typeof KeySettlement>;

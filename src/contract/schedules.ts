// Schedules kept by the service (docs/api.md "Schedules"; docs/decisions/0037-schedules-at-the-service.md): an agent
// run with a fixed input on a cron expression or an interval in an IANA time zone, each occurrence run once.
import { Type, type Static } from '@sinclair/typebox';
import { Labels } from './schemas.js';
import { UUID_PATTERN } from './uuid.js';
import { MAX_CAP_CENTS } from './budgets.js';

export * from './schedule-terms.js';
import {
  MAX_BACKFILL_RUNS,
  MAX_CATCH_UP_SECONDS,
  MAX_CRON_CHARS,
  MAX_INTERVAL_SECONDS,
  MAX_PAUSE_AFTER_FAILURES,
  MAX_TIME_ZONE_CHARS,
  MIN_INTERVAL_SECONDS,
  OVERLAP_POLICIES,
  PAUSE_REASONS,
} from './schedule-terms.js';

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const strict = { additionalProperties: false } as const;
const Overlap = Type.Union(OVERLAP_POLICIES.map((policy) => Type.Literal(policy)));
const Input = Type.Record(Type.String({ maxLength: 128 }), Type.Unknown());

export const ScheduleParams = Type.Object({ schedule_id: Type.String({ maxLength: 64 }) });
export type ScheduleParams = Static<typeof ScheduleParams>;

/** The parts a schedule is made of and changed by; `cron` or `interval_seconds`, one of them. */
const terms = {
  agent_id: Type.String({ minLength: 1, maxLength: 128 }),
  input: Type.Optional(Input),
  cron: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_CRON_CHARS })),
  interval_seconds: Type.Optional(Type.Integer({ minimum: MIN_INTERVAL_SECONDS, maximum: MAX_INTERVAL_SECONDS })),
  time_zone: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_TIME_ZONE_CHARS })),
  overlap: Type.Optional(Overlap),
  catch_up_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_CATCH_UP_SECONDS })),
  node_id: Type.Optional(Type.String({ pattern: UUID_PATTERN })),
  labels: Type.Optional(Labels),
  daily_cap_cents: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_CAP_CENTS }), Type.Null()])),
  pause_after_failures: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: MAX_PAUSE_AFTER_FAILURES }), Type.Null()])),
};

// POST /v1/swarm/schedules
export const ScheduleRequest = Type.Object({ ...terms, paused: Type.Optional(Type.Boolean()) }, strict);
export type ScheduleRequest = Static<typeof ScheduleRequest>;

// PATCH /v1/swarm/schedules/{schedule_id}: what it names changes; `cron` replaces an interval and the reverse.
const { agent_id: _agent, ...changeable } = terms;
export const ScheduleChange = Type.Object(
  {
    ...changeable,
    agent_id: Type.Optional(terms.agent_id),
    node_id: Type.Optional(Type.Union([Type.String({ pattern: UUID_PATTERN }), Type.Null()])),
  },
  { ...strict, minProperties: 1 },
);
export type ScheduleChange = Static<typeof ScheduleChange>;

/** Consecutive occurrences skipped for one reason, coalesced into one record. */
export const ScheduleSkip = Type.Object({
  reason: Type.String(),
  count: Type.Integer(),
  first_at: Timestamp,
  last_at: Timestamp,
  detail: Type.Union([Type.String(), Type.Null()]),
});
export type ScheduleSkip = Static<typeof ScheduleSkip>;

export const Schedule = Type.Object({
  schedule_id: Type.String(),
  agent_id: Type.String(),
  input: Type.Union([Input, Type.Null()]),
  cron: Type.Union([Type.String(), Type.Null()]),
  interval_seconds: Type.Union([Type.Integer(), Type.Null()]),
  time_zone: Type.String(),
  overlap: Overlap,
  catch_up_seconds: Type.Integer(),
  node_id: Type.Union([Type.String(), Type.Null()]),
  labels: Type.Array(Type.String()),
  daily_cap_cents: Type.Union([Type.Integer(), Type.Null()]),
  pause_after_failures: Type.Union([Type.Integer(), Type.Null()]),
  paused: Type.Boolean(),
  pause_reason: Type.Union([Type.Union(PAUSE_REASONS.map((reason) => Type.Literal(reason))), Type.Null()]),
  consecutive_failures: Type.Integer(),
  /** The next occurrence the service will fire; null while paused. */
  next_fire_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Schedule = Static<typeof Schedule>;

/** GET /v1/swarm/schedules/{schedule_id}: the schedule, its next five fire times and what it did lately. */
export const ScheduleDetail = Type.Composite([
  Schedule,
  Type.Object({
    next_fire_times: Type.Array(Timestamp),
    /** The IANA time zone database this service computes local times with (process.versions.tz). */
    tz_version: Type.String(),
    /** What one occurrence of it costs now, in cents. */
    price_cents: Type.Integer(),
    /** Its runs in the next 24 h and 30 days and what they cost at most, each day held to its cap. */
    cost: Type.Object({
      runs_per_day: Type.Integer(),
      per_day_cents: Type.Integer(),
      runs_per_month: Type.Integer(),
      per_month_cents: Type.Integer(),
    }),
    /** Its last coalesced skip records, newest first. */
    skips: Type.Array(ScheduleSkip),
    /** Its last occurrences that made a run, newest first. */
    occurrences: Type.Array(Type.Object({ fire_at: Timestamp, run_id: Type.Union([Type.String(), Type.Null()]), state: Type.String() })),
  }),
]);
export type ScheduleDetail = Static<typeof ScheduleDetail>;
export const SchedulesResponse = Type.Object({ schedules: Type.Array(Schedule) });
export type SchedulesResponse = Static<typeof SchedulesResponse>;
export const ScheduleRemoved = Type.Object({ schedule_id: Type.String(), removed: Type.Literal(true) });
export type ScheduleRemoved = Static<typeof ScheduleRemoved>;

// POST /v1/swarm/schedules/{schedule_id}/backfill
export const BackfillRequest = Type.Object(
  {
    /** ISO 8601 times; the occurrences from `from` to `to`, both included. */
    from: Type.String({ minLength: 1, maxLength: 40 }),
    to: Type.String({ minLength: 1, maxLength: 40 }),
    /** The count of runs the backfill would make, as a refusal (or a dry run) said: needed over BACKFILL_CONFIRM_OVER. */
    confirm_runs: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_BACKFILL_RUNS })),
    /** true: say what it would run and cost, run nothing. */
    dry_run: Type.Optional(Type.Boolean()),
  },
  strict,
);
export type BackfillRequest = Static<typeof BackfillRequest>;
export const BackfillResponse = Type.Object({
  schedule_id: Type.String(),
  /** Occurrences in the range that had no run, and what running them costs at most. */
  runs: Type.Integer(),
  cost_cents: Type.Integer(),
  /** Occurrences of the range skipped because they have a run already. */
  already_run: Type.Integer(),
  dry_run: Type.Boolean(),
  occurrences: Type.Array(Type.Object({ fire_at: Timestamp, run_id: Type.Union([Type.String(), Type.Null()]), state: Type.String() })),
});
export type BackfillResponse = Static<typeof BackfillResponse>;

/** The most local registrations one node moves to the service; a node serves fewer agents than this. */
export const MAX_MIGRATED_REGISTRATIONS = 100;

/**
 * POST /v1/swarm/nodes/self/schedules: a node's one-time move of its daemon's local schedules to the service, each
 * pinned to it (docs/api.md "Schedules"). What the daemon kept of each: its interval (kept even under a minute), its
 * daily cap (a UTC day), its pause for money, its default input and its next planned time.
 */
export const ScheduleMigrationRequest = Type.Object(
  {
    registrations: Type.Array(
      Type.Object(
        {
          agent_id: Type.String({ minLength: 1, maxLength: 64 }),
          every_seconds: Type.Integer({ minimum: 1, maximum: MAX_INTERVAL_SECONDS }),
          daily_cap_cents: Type.Union([Type.Integer({ minimum: 0, maximum: MAX_CAP_CENTS }), Type.Null()]),
          paused_reason: Type.Union([Type.Literal('insufficient_balance'), Type.Literal('budget_exceeded'), Type.Null()]),
          input: Type.Union([Input, Type.Null()]),
          next_run_at: Type.Union([Timestamp, Type.Null()]),
        },
        strict,
      ),
      { maxItems: MAX_MIGRATED_REGISTRATIONS },
    ),
  },
  strict,
);
export type ScheduleMigrationRequest = Static<typeof ScheduleMigrationRequest>;

export const ScheduleMigrationResponse = Type.Object({
  /** When the node's registrations moved; a repeat answers the same and moves nothing. */
  migrated_at: Timestamp,
  schedules: Type.Array(Type.Object({ agent_id: Type.String(), schedule_id: Type.String() })),
});
export type ScheduleMigrationResponse = Static<typeof ScheduleMigrationResponse>;

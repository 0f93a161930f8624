// What a user spent (docs/api.md "Usage"): GET /v1/swarm/usage, from the ledger, grouped by day (UTC), agent and
// node over a range of days. Each run's charge and its refund are counted on the day the run started, as the
// budgets count them.
import { Type, type Static } from '@sinclair/typebox';

/** The longest range one request may ask for. */
export const MAX_USAGE_DAYS = 366;
/** The range when none is asked: the last 30 days, today included. */
export const DEFAULT_USAGE_DAYS = 30;
export const USAGE_DATE_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

export const UsageQuery = Type.Object({
  /** The first day, YYYY-MM-DD (UTC). */
  from: Type.Optional(Type.String({ maxLength: 10 })),
  /** The last day, included. */
  to: Type.Optional(Type.String({ maxLength: 10 })),
});
export type UsageQuery = Static<typeof UsageQuery>;

const Figures = {
  /** Runs charged (each run once, however it ended). */
  runs: Type.Integer(),
  charged_cents: Type.Integer(),
  refunded_cents: Type.Integer(),
  /** charged_cents - refunded_cents: what the wallet paid. */
  net_cents: Type.Integer(),
};
export const UsageFigures = Type.Object(Figures);
export type UsageFigures = Static<typeof UsageFigures>;

export const UsageResponse = Type.Object({
  from: Type.String(),
  to: Type.String(),
  totals: UsageFigures,
  /** Every day of the range, those without runs too (a chart's points). */
  days: Type.Array(Type.Object({ date: Type.String(), ...Figures })),
  by_agent: Type.Array(Type.Object({ agent_id: Type.String(), ...Figures })),
  /** node_id null: runs no node took (refunded not_picked_up). */
  by_node: Type.Array(Type.Object({ node_id: Type.Union([Type.String(), Type.Null()]), ...Figures })),
  /** One row per day, agent and node that had runs. */
  rows: Type.Array(
    Type.Object({ date: Type.String(), agent_id: Type.String(), node_id: Type.Union([Type.String(), Type.Null()]), ...Figures }),
  ),
});
export type UsageResponse = Static<typeof UsageResponse>;

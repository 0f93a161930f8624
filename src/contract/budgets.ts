// Caps on what a user spends (docs/api.md "Budgets"): per day and per month (UTC), on all the user's runs or on one
// agent's, in cents. Enforced by the service in the transaction that debits a run, however the run was started.
import { Type, type Static } from '@sinclair/typebox';

export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];
/** A budget's scope in its path: every agent of the user, or one agent_id. */
export const ALL_AGENTS_SCOPE = 'all';
/** The highest cap: $1,000,000 a period, far above any wallet, and exact as a JS number. */
export const MAX_CAP_CENTS = 100_000_000;

/** Midnight UTC that starts the period `nowMs` falls in. */
export function periodStart(period: BudgetPeriod, nowMs: number): number {
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate())
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/** Midnight UTC that starts the next period: when the budget resets. */
export function periodEnd(period: BudgetPeriod, nowMs: number): number {
  const date = new Date(nowMs);
  return period === 'day'
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

const Timestamp = Type.String({ description: 'ISO 8601, UTC' });
const Period = Type.Union(BUDGET_PERIODS.map((period) => Type.Literal(period)));

export const BudgetParams = Type.Object({ scope: Type.String({ maxLength: 128 }), period: Type.String({ maxLength: 16 }) });
export type BudgetParams = Static<typeof BudgetParams>;
export const BudgetRequest = Type.Object(
  { cap_cents: Type.Integer({ minimum: 0, maximum: MAX_CAP_CENTS }) },
  { additionalProperties: false },
);
export type BudgetRequest = Static<typeof BudgetRequest>;

export const Budget = Type.Object({
  /** null: every agent of the user. */
  agent_id: Type.Union([Type.String(), Type.Null()]),
  period: Period,
  cap_cents: Type.Integer(),
  /** What the runs started in this period were charged, refunds taken off. */
  spent_cents: Type.Integer(),
  period_start: Timestamp,
  resets_at: Timestamp,
  updated_at: Timestamp,
});
export type Budget = Static<typeof Budget>;
export const BudgetsResponse = Type.Object({ budgets: Type.Array(Budget) });
export type BudgetsResponse = Static<typeof BudgetsResponse>;
export const BudgetRemoved = Type.Object({
  agent_id: Type.Union([Type.String(), Type.Null()]),
  period: Period,
  removed: Type.Literal(true),
});

// A user's budgets (docs/api.md "Budgets") and what is spent against them. Spent is what the runs started in the
// period were charged, refunds taken off, kept as a counter on the budget's row (budget-counters-migration.ts): the
// debit of a run adds its price to the counters of the caps that apply, in the same transaction (on PostgreSQL, in
// the one statement of runs/execute-statement.ts), and its refund takes it off those counting the run's period. A
// run queued or running counts: it is charged until it is refunded. A new cap starts from what its period's runs
// were charged (one figure with GET /v1/swarm/usage for the same runs).
//
// Locks, always in this order: the user's wallet row, then the budget rows. A change of caps takes the wallet row
// and moves its caps_version, so an execute that read the caps before sees the change there and goes the long way.
import { sql } from 'kysely';
import { periodEnd, periodStart, type Budget, type BudgetPeriod } from '../../contract/budgets.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';

/** The scope '*' is every agent of the user; otherwise an agent_id. */
export const EVERY_AGENT = '*';

export interface BudgetCap {
  scope: string;
  period: BudgetPeriod;
  cap_cents: number;
  updated_at: number;
  spent_cents: number;
  /** The period `spent_cents` counts. */
  period_start: number;
}

export interface BudgetStore {
  /**
   * The caps that apply to a run of `agentId`: the user's on every agent, and those on this agent. Locked until the
   * transaction ends (PostgreSQL): call after the debit, which locked the wallet row.
   */
  capsFor(userId: string, agentId: string): Promise<BudgetCap[]>;
  /** Counts a run's price against the caps that apply to it (after its debit, in its transaction). */
  charge(userId: string, agentId: string, cents: number, now: number): Promise<void>;
  /** Takes a refunded run's price off the counters of its period (after the refund, in its transaction). */
  refund(userId: string, agentId: string, cents: number, startedAt: number): Promise<void>;
  list(userId: string, now: number): Promise<Budget[]>;
  /** The cap as it stands, in cents; null when the user has none there. */
  capOf(userId: string, scope: string, period: BudgetPeriod): Promise<number | null>;
  /** Inside a transaction. */
  put(userId: string, scope: string, period: BudgetPeriod, capCents: number): Promise<Budget>;
  remove(userId: string, scope: string, period: BudgetPeriod): Promise<boolean>;
}

/** What the cap's counter says is spent in the period `now` falls in: a counter of a period gone by counts 0. */
export function spentOf(cap: Pick<BudgetCap, 'period' | 'spent_cents' | 'period_start'>, now: number): number {
  return cap.period_start === periodStart(cap.period, now) ? Number(cap.spent_cents) : 0;
}

const CAP_COLUMNS = ['scope', 'period', 'cap_cents', 'updated_at', 'spent_cents', 'period_start'] as const;

export function createBudgetStore(store: Store, clock: Clock): BudgetStore {
  // Every execute that goes the long way asks: compiled once (compiled-once.ts).
  const capsOf = compiledOnce((db, of: { userId: string; agentId: string }) =>
    store.forUpdate(
      db
        .selectFrom('budgets')
        .select(CAP_COLUMNS)
        .where('user_id', '=', of.userId)
        .where((eb) => eb.or([eb('scope', '=', EVERY_AGENT), eb('scope', '=', of.agentId)])),
    ),
  );
  /** What the period's runs were charged so far, for a cap set now (a new cap starts from it). */
  const chargedSince = async (userId: string, scope: string, period: BudgetPeriod, now: number): Promise<number> => {
    const row = await store.db
      .selectFrom('runs')
      .select(sql<number>`cast(coalesce(sum(charged_cents), 0) as bigint)`.as('cents'))
      .where('user_id', '=', userId)
      .where('started_at', '>=', periodStart(period, now))
      .$if(scope !== EVERY_AGENT, (query) => query.where('agent_id', '=', scope))
      .executeTakeFirstOrThrow();
    return Number(row.cents);
  };
  const viewOf = (cap: BudgetCap, now: number): Budget => ({
    agent_id: cap.scope === EVERY_AGENT ? null : cap.scope,
    period: cap.period,
    cap_cents: Number(cap.cap_cents),
    spent_cents: spentOf(cap, now),
    period_start: isoTime(periodStart(cap.period, now)),
    resets_at: isoTime(periodEnd(cap.period, now)),
    updated_at: isoTime(cap.updated_at),
  });
  const scopes = (agentId: string) => [EVERY_AGENT, agentId];

  return {
    async capsFor(userId, agentId) {
      return (await capsOf(store.db, { userId, agentId })).rows;
    },

    async charge(userId, agentId, cents, now) {
      // A counter of a period gone by starts again from this run.
      const current = sql<number>`(CASE WHEN period = 'day' THEN cast(${periodStart('day', now)} as bigint) ELSE cast(${periodStart('month', now)} as bigint) END)`;
      await store.db
        .updateTable('budgets')
        .set({
          spent_cents: sql`(CASE WHEN period_start = ${current} THEN spent_cents ELSE 0 END) + cast(${cents} as bigint)`,
          period_start: current,
        })
        .where('user_id', '=', userId)
        .where('scope', 'in', scopes(agentId))
        .execute();
    },

    async refund(userId, agentId, cents, startedAt) {
      // Only the counters still counting the run's period: a run of last month refunded today gives nothing back to
      // this month's.
      await store.db
        .updateTable('budgets')
        .set({
          spent_cents: sql`(CASE WHEN spent_cents > cast(${cents} as bigint) THEN spent_cents - cast(${cents} as bigint) ELSE 0 END)`,
        })
        .where('user_id', '=', userId)
        .where('scope', 'in', scopes(agentId))
        .where('period_start', '<=', startedAt)
        .execute();
    },

    async list(userId, now) {
      const caps = await store.db
        .selectFrom('budgets')
        .select(CAP_COLUMNS)
        .where('user_id', '=', userId)
        .orderBy('scope')
        .orderBy('period')
        .execute();
      return caps.map((cap) => viewOf(cap, now));
    },

    async capOf(userId, scope, period) {
      const row = await store.db
        .selectFrom('budgets')
        .select('cap_cents')
        .where('user_id', '=', userId)
        .where('scope', '=', scope)
        .where('period', '=', period)
        .executeTakeFirst();
      return row === undefined ? null : Number(row.cap_cents);
    },

    async put(userId, scope, period, capCents) {
      const now = clock.now();
      // The wallet row first (the lock order), and its caps_version moved: see the top of this file.
      await store.db
        .updateTable('wallets')
        .set({ caps_version: sql`caps_version + 1` })
        .where('user_id', '=', userId)
        .execute();
      const spent = await chargedSince(userId, scope, period, now);
      const start = periodStart(period, now);
      await store.db
        .insertInto('budgets')
        .values({
          user_id: userId,
          scope,
          period,
          cap_cents: capCents,
          created_at: now,
          updated_at: now,
          spent_cents: spent,
          period_start: start,
        })
        .onConflict((conflict) => conflict.columns(['user_id', 'scope', 'period']).doUpdateSet({ cap_cents: capCents, updated_at: now }))
        .execute();
      const cap = await store.db
        .selectFrom('budgets')
        .select(CAP_COLUMNS)
        .where('user_id', '=', userId)
        .where('scope', '=', scope)
        .where('period', '=', period)
        .executeTakeFirstOrThrow();
      return viewOf(cap, now);
    },

    async remove(userId, scope, period) {
      const removed = await store.db
        .deleteFrom('budgets')
        .where('user_id', '=', userId)
        .where('scope', '=', scope)
        .where('period', '=', period)
        .executeTakeFirst();
      return Number(removed.numDeletedRows) > 0;
    },
  };
}

// A user's budgets (docs/api.md "Budgets") and what is spent against them. Spent is what the runs started in the
// period were charged, refunds taken off: runs.charged_cents, which the debit sets and a refund zeroes in the same
// transactions as the ledger's entries (one figure with GET /v1/swarm/usage for the same runs). A run queued or
// running counts: it is charged until it is refunded.
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
}

export interface BudgetStore {
  /** The caps that apply to a run of `agentId`: the user's on every agent, and those on this agent. */
  capsFor(userId: string, agentId: string): Promise<BudgetCap[]>;
  /** What the runs started since each cap's period began were charged, per cap, in the order given. */
  spentFor(userId: string, agentId: string, caps: readonly BudgetCap[], now: number): Promise<number[]>;
  list(userId: string, now: number): Promise<Budget[]>;
  put(userId: string, scope: string, period: BudgetPeriod, capCents: number): Promise<Budget>;
  remove(userId: string, scope: string, period: BudgetPeriod): Promise<boolean>;
}

export function createBudgetStore(store: Store, clock: Clock): BudgetStore {
  // Every execute asks (most users have no cap): compiled once (compiled-once.ts).
  const capsOf = compiledOnce((db, of: { userId: string; agentId: string }) =>
    db
      .selectFrom('budgets')
      .select(['scope', 'period', 'cap_cents', 'updated_at'])
      .where('user_id', '=', of.userId)
      .where((eb) => eb.or([eb('scope', '=', EVERY_AGENT), eb('scope', '=', of.agentId)])),
  );
  const spentFor = async (userId: string, agentId: string, caps: readonly BudgetCap[], now: number): Promise<number[]> => {
    if (caps.length === 0) return [];
    const day = periodStart('day', now);
    const from = caps.some((cap) => cap.period === 'month') ? periodStart('month', now) : day;
    // One pass over the user's runs of the period (runs_by_user), all four sums at once.
    const row = await store.db
      .selectFrom('runs')
      .select([
        sql<number>`cast(coalesce(sum(case when started_at >= ${day} then charged_cents else 0 end), 0) as bigint)`.as('all_day'),
        sql<number>`cast(coalesce(sum(charged_cents), 0) as bigint)`.as('all_month'),
        sql<number>`cast(coalesce(sum(case when agent_id = ${agentId} and started_at >= ${day} then charged_cents else 0 end), 0) as bigint)`.as('agent_day'),
        sql<number>`cast(coalesce(sum(case when agent_id = ${agentId} then charged_cents else 0 end), 0) as bigint)`.as('agent_month'),
      ])
      .where('user_id', '=', userId)
      .where('started_at', '>=', from)
      .executeTakeFirstOrThrow();
    return caps.map((cap) => Number(cap.scope === EVERY_AGENT ? (cap.period === 'day' ? row.all_day : row.all_month) : cap.period === 'day' ? row.agent_day : row.agent_month));
  };

  const viewOf = async (userId: string, cap: BudgetCap, now: number): Promise<Budget> => {
    const [spent] = await spentFor(userId, cap.scope, [cap], now);
    return {
      agent_id: cap.scope === EVERY_AGENT ? null : cap.scope,
      period: cap.period,
      cap_cents: cap.cap_cents,
      spent_cents: spent!,
      period_start: isoTime(periodStart(cap.period, now)),
      resets_at: isoTime(periodEnd(cap.period, now)),
      updated_at: isoTime(cap.updated_at),
    };
  };

  return {
    async capsFor(userId, agentId) {
      return (await capsOf(store.db, { userId, agentId })).rows;
    },
    spentFor,

    async list(userId, now) {
      const caps = await store.db
        .selectFrom('budgets')
        .select(['scope', 'period', 'cap_cents', 'updated_at'])
        .where('user_id', '=', userId)
        .orderBy('scope')
        .orderBy('period')
        .execute();
      return Promise.all(caps.map((cap) => viewOf(userId, cap, now)));
    },

    async put(userId, scope, period, capCents) {
      const now = clock.now();
      await store.db
        .insertInto('budgets')
        .values({ user_id: userId, scope, period, cap_cents: capCents, created_at: now, updated_at: now })
        .onConflict((conflict) => conflict.columns(['user_id', 'scope', 'period']).doUpdateSet({ cap_cents: capCents, updated_at: now }))
        .execute();
      return viewOf(userId, { scope, period, cap_cents: capCents, updated_at: now }, now);
    },

    async remove(userId, scope, period) {
      const removed = await store.db.deleteFrom('budgets').where('user_id', '=', userId).where('scope', '=', scope).where('period', '=', period).executeTakeFirst();
      return Number(removed.numDeletedRows) > 0;
    },
  };
}

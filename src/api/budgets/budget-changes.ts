// Setting and removing a user's budgets (docs/api.md "Budgets"), as PUT and DELETE /v1/swarm/budgets/{scope}/{period}
// and the console's budgets form do it: the scope and period checked; a change that raises the cap (a higher one, or
// its removal) only with a recent sign-in, one that lowers it with any (contract/spending-limits.ts); the change and
// its audit in one transaction.
import { findAgentSku } from '../../contract/agents.js';
import { ALL_AGENTS_SCOPE, BUDGET_PERIODS, MAX_CAP_CENTS, type Budget, type BudgetPeriod } from '../../contract/budgets.js';
import { SvcError } from '../../contract/errors.js';
import { raisesLimit, type SpendingLimit } from '../../contract/spending-limits.js';
import type { ServiceContext } from '../context.js';
import type { ClientSeen } from '../mail/messages.js';
import { createBudgetStore, EVERY_AGENT, type BudgetStore } from './budget-store.js';

/** A budget as its path names it: the scope as stored, the agent it is on (null: all), its period. */
export interface BudgetKey {
  scope: string;
  agentId: string | null;
  period: BudgetPeriod;
}

/**
 * Throws 401 step_up_required unless the caller signed in recently (the API's JWT, the console's session), naming
 * `what` was refused.
 */
export type RequireRecentSignIn = (what: string) => void;

export interface BudgetChanges {
  readonly store: BudgetStore;
  /** The budget `scope` and `period` name, or 404 for what names no budget a user could have. */
  keyOf(scope: string, period: string): BudgetKey;
  set(userId: string, key: BudgetKey, capCents: number, client: ClientSeen, requireRecent: RequireRecentSignIn): Promise<Budget>;
  /** 404 when the user has no such budget. */
  remove(userId: string, key: BudgetKey, client: ClientSeen, requireRecent: RequireRecentSignIn): Promise<void>;
}

const RAISED = 'this raises a spending limit (lowering one or setting a first one needs no recent sign-in)';

export function createBudgetChanges(ctx: ServiceContext): BudgetChanges {
  const budgets = createBudgetStore(ctx.store, ctx.clock);
  /** Inside the change's transaction: the cap it replaces is read under a lock no other change of the user's passes. */
  const stepUpIfRaised = async (userId: string, key: BudgetKey, after: SpendingLimit, requireRecent: RequireRecentSignIn) => {
    await ctx.store.lock(`budgets:${userId}`);
    if (raisesLimit(await budgets.capOf(userId, key.scope, key.period), after)) requireRecent(RAISED);
  };
  return {
    store: budgets,

    keyOf(scope, period) {
      if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
        throw new SvcError('not_found', `no budget period ${JSON.stringify(period.slice(0, 16))}: day or month`, {
          remedy: 'PUT /v1/swarm/budgets/{all|agent_id}/{day|month}',
        });
      }
      if (scope === ALL_AGENTS_SCOPE) return { scope: EVERY_AGENT, agentId: null, period: period as BudgetPeriod };
      if (findAgentSku(scope) === undefined)
        throw new SvcError(
          'agent_not_found',
          `no agent ${JSON.stringify(scope.slice(0, 128))}: a budget is on all agents (all) or on one of the catalog`,
        );
      return { scope, agentId: scope, period: period as BudgetPeriod };
    },

    set(userId, key, capCents, client, requireRecent) {
      // The route's schema bounds it too; a caller without one (the console's form) is held to the same bound here.
      if (!Number.isInteger(capCents) || capCents < 0 || capCents > MAX_CAP_CENTS) {
        throw new SvcError('invalid_request', `cap_cents must be a whole number of cents from 0 to ${MAX_CAP_CENTS}`, {
          extensions: { errors: [{ path: '/cap_cents', message: `from 0 to ${MAX_CAP_CENTS}` }] },
        });
      }
      return ctx.store.transaction(async () => {
        await stepUpIfRaised(userId, key, capCents, requireRecent);
        const budget = await budgets.put(userId, key.scope, key.period, capCents);
        await ctx.audit.record(userId, 'budget_changed', client, { agent_id: key.agentId, period: key.period, cap_cents: capCents });
        return budget;
      });
    },

    remove(userId, key, client, requireRecent) {
      return ctx.store.transaction(async () => {
        await stepUpIfRaised(userId, key, null, requireRecent);
        if (!(await budgets.remove(userId, key.scope, key.period))) {
          throw new SvcError(
            'not_found',
            `you have no ${key.period === 'day' ? 'daily' : 'monthly'} budget on ${key.agentId ?? 'all agents'}`,
            { remedy: 'Yours: swarm-node budget list.' },
          );
        }
        await ctx.audit.record(userId, 'budget_changed', client, { agent_id: key.agentId, period: key.period, cap_cents: null });
      });
    },
  };
}

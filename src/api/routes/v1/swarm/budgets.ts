// The user's budgets (docs/api.md "Budgets"): listed with what is spent and when each resets; set and removed with
// the JWT (not a node credential: a node does node work only), each change audited. A cap is per day or per month
// (UTC), on every agent (`all`) or on one agent_id.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { findAgentSku } from '../../../../contract/agents.js';
import { ALL_AGENTS_SCOPE, BUDGET_PERIODS, BudgetParams, BudgetRemoved, BudgetRequest, Budget, BudgetsResponse, type BudgetPeriod } from '../../../../contract/budgets.js';
import { SvcError } from '../../../../contract/errors.js';
import type { ServiceContext } from '../../../context.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createBudgetStore, EVERY_AGENT } from '../../../budgets/budget-store.js';

export function budgetRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const budgets = createBudgetStore(ctx.store, ctx.clock);
    /** The scope as stored and the period, or 404 for what names no budget a user could have. */
    const budgetOf = (request: FastifyRequest<{ Params: BudgetParams }>): { scope: string; agentId: string | null; period: BudgetPeriod } => {
      const { scope, period } = request.params;
      if (!(BUDGET_PERIODS as readonly string[]).includes(period)) {
        throw new SvcError('not_found', `no budget period ${JSON.stringify(period.slice(0, 16))}: day or month`, { remedy: 'PUT /v1/swarm/budgets/{all|agent_id}/{day|month}' });
      }
      if (scope === ALL_AGENTS_SCOPE) return { scope: EVERY_AGENT, agentId: null, period: period as BudgetPeriod };
      if (findAgentSku(scope) === undefined) throw new SvcError('agent_not_found', `no agent ${JSON.stringify(scope.slice(0, 128))}: a budget is on all agents (all) or on one of the catalog`);
      return { scope, agentId: scope, period: period as BudgetPeriod };
    };

    app.get('/v1/swarm/budgets', { config: { auth: 'access-token' }, schema: { response: { 200: BudgetsResponse } } }, async (request) => ({
      budgets: await budgets.list(userOf(request).sub, ctx.clock.now()),
    }));

    app.put<{ Params: BudgetParams; Body: BudgetRequest }>(
      '/v1/swarm/budgets/:scope/:period',
      { config: { auth: 'access-token' }, schema: { params: BudgetParams, body: BudgetRequest, response: { 200: Budget } } },
      async (request) => {
        const userId = userOf(request).sub;
        const { scope, agentId, period } = budgetOf(request);
        return ctx.store.transaction(async () => {
          const budget = await budgets.put(userId, scope, period, request.body.cap_cents);
          await ctx.audit.record(userId, 'budget_changed', clientSeen(request), { agent_id: agentId, period, cap_cents: request.body.cap_cents });
          return budget;
        });
      },
    );

    app.delete<{ Params: BudgetParams }>(
      '/v1/swarm/budgets/:scope/:period',
      { config: { auth: 'access-token' }, schema: { params: BudgetParams, response: { 200: BudgetRemoved } } },
      async (request) => {
        const userId = userOf(request).sub;
        const { scope, agentId, period } = budgetOf(request);
        return ctx.store.transaction(async () => {
          if (!(await budgets.remove(userId, scope, period))) {
            throw new SvcError('not_found', `you have no ${period === 'day' ? 'daily' : 'monthly'} budget on ${agentId ?? 'all agents'}`, { remedy: 'swarm-node budget list shows yours.' });
          }
          await ctx.audit.record(userId, 'budget_changed', clientSeen(request), { agent_id: agentId, period, cap_cents: null });
          return { agent_id: agentId, period, removed: true as const };
        });
      },
    );
  };
}

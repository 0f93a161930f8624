// The user's budgets (docs/api.md "Budgets"): listed with what is spent and when each resets; set and removed with
// the JWT (not a node credential: a node does node work only), each change audited. A cap is per day or per month
// (UTC), on every agent (`all`) or on one agent_id. Raising or removing one needs a recent sign-in, lowering one
// never: not the route's `stepUp`, since only the cap it replaces says which (budgets/budget-changes.ts).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { BudgetParams, BudgetRemoved, BudgetRequest, Budget, BudgetsResponse } from '../../../../contract/budgets.js';
import type { ServiceContext } from '../../../context.js';
import { requireRecentSignIn } from '../../../auth/step-up.js';
import { userOf } from '../../../http/auth.js';
import { clientSeen } from '../../../http/client-seen.js';
import { createBudgetChanges, type RequireRecentSignIn } from '../../../budgets/budget-changes.js';

export function budgetRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    const budgets = createBudgetChanges(ctx);
    const recentSignIn =
      (request: FastifyRequest): RequireRecentSignIn =>
      (what) =>
        requireRecentSignIn(userOf(request), ctx.clock.now(), what);

    app.get('/v1/swarm/budgets', { config: { auth: 'access-token' }, schema: { response: { 200: BudgetsResponse } } }, async (request) => ({
      budgets: await budgets.store.list(userOf(request).sub, ctx.clock.now()),
    }));

    app.put<{ Params: BudgetParams; Body: BudgetRequest }>(
      '/v1/swarm/budgets/:scope/:period',
      { config: { auth: 'access-token' }, schema: { params: BudgetParams, body: BudgetRequest, response: { 200: Budget } } },
      async (request) => {
        const key = budgets.keyOf(request.params.scope, request.params.period);
        return budgets.set(userOf(request).sub, key, request.body.cap_cents, clientSeen(request), recentSignIn(request));
      },
    );

    app.delete<{ Params: BudgetParams }>(
      '/v1/swarm/budgets/:scope/:period',
      { config: { auth: 'access-token' }, schema: { params: BudgetParams, response: { 200: BudgetRemoved } } },
      async (request) => {
        const key = budgets.keyOf(request.params.scope, request.params.period);
        await budgets.remove(userOf(request).sub, key, clientSeen(request), recentSignIn(request));
        return { agent_id: key.agentId, period: key.period, removed: true as const };
      },
    );
  };
}

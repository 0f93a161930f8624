// The console's budgets (docs/api.md "Console"): GET {wallet_url}/budgets, POST budgets (set one: on, period, cap in
// dollars) and POST budgets/remove, through budgets/budget-changes.ts as the API's PUT and DELETE, and, as there,
// raising or removing one only with a recent sign-in (console/recent-sign-in.ts). A refused form is the page again
// with the reason and what was typed, its status the API's, and nothing changed.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { ALL_AGENTS_SCOPE } from '../../../contract/budgets.js';
import { parseDollarsToCents } from '../../../contract/money.js';
import { createBudgetChanges } from '../../budgets/budget-changes.js';
import { budgetsPage, type BudgetsModel } from '../../console/budgets-page.js';
import { requireRecentSession } from '../../console/recent-sign-in.js';
import { clientSeen } from '../../http/client-seen.js';
import { textField } from '../../wallet-page/form-body.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin } from '../../wallet-page/security.js';
import type { WalletSession } from '../../wallet-page/wallet-sessions.js';

export function budgetPages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const budgets = createBudgetChanges(ctx);

    const render = async (
      request: FastifyRequest,
      reply: FastifyReply,
      session: WalletSession,
      status: number,
      extra: Partial<BudgetsModel> = {},
    ) =>
      sendHtml(
        reply,
        status,
        budgetsPage(scope.frame(request, session, 'budgets'), {
          budgets: await budgets.store.list(session.user_id, ctx.clock.now()),
          ...extra,
        }),
      );

    app.get('/budgets', async (request, reply) => render(request, reply, await scope.requireSession(request), 200));

    const recentSession = (session: WalletSession) => (what: string) => requireRecentSession(session, ctx.clock.now(), what);
    type Typed = { scope: string; period: string; cap: string };
    const refused = (request: FastifyRequest, reply: FastifyReply, session: WalletSession, error: unknown, typed: Typed) => {
      if (!(error instanceof SvcError) || error.status >= 500) throw error;
      // A step-up's refusal says itself that nothing was changed.
      const said = sentence(error.message);
      const message = error.message.endsWith('nothing was changed') ? said : `${said} Nothing was changed.`;
      return render(request, reply, session, error.status, { error: { message, ...typed }, confirm: error.code === 'step_up_required' });
    };

    app.post('/budgets', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const typed = {
        scope: textField(request.body, 'scope', 128),
        period: textField(request.body, 'period', 16),
        cap: textField(request.body, 'cap', 16),
      };
      try {
        const cents = parseDollarsToCents(typed.cap.trim());
        if (cents === undefined) throw new SvcError('invalid_request', 'Enter the cap in dollars, for example 5 or 2.50');
        await budgets.set(session.user_id, budgets.keyOf(typed.scope, typed.period), cents, clientSeen(request), recentSession(session));
      } catch (error) {
        return refused(request, reply, session, error, typed);
      }
      return redirectTo(request, reply, 'budgets');
    });

    app.post('/budgets/remove', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const key = budgets.keyOf(textField(request.body, 'scope', 128), textField(request.body, 'period', 16));
      try {
        await budgets.remove(session.user_id, key, clientSeen(request), recentSession(session));
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'step_up_required') throw error;
        return refused(request, reply, session, error, { scope: key.agentId ?? ALL_AGENTS_SCOPE, period: key.period, cap: '' });
      }
      return redirectTo(request, reply, 'budgets');
    });
  };
}

/** A message as a sentence: capitalised, with its full stop. */
export function sentence(message: string): string {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

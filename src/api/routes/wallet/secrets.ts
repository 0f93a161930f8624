// The console's secrets (docs/api.md "Console"): GET {wallet_url}/secrets (names and dates), POST secrets (set one)
// and POST secrets/remove, through user-secrets/secret-changes.ts as the API's PUT and DELETE, and, as there, only
// with a recent sign-in (console/recent-sign-in.ts). A refused form changes nothing and never shows the value again.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { MAX_SECRET_VALUE_BYTES } from '../../../contract/secrets.js';
import { recentUntil, requireRecentSession } from '../../console/recent-sign-in.js';
import { secretsPage, type SecretsModel } from '../../console/secrets-page.js';
import { clientSeen } from '../../http/client-seen.js';
import { createSecretChanges } from '../../user-secrets/secret-changes.js';
import { textField } from '../../wallet-page/form-body.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin } from '../../wallet-page/security.js';
import type { WalletSession } from '../../wallet-page/wallet-sessions.js';
import { sentence } from './budgets.js';

/** A value of 16 KiB, percent-encoded (3 bytes a byte at worst), with its name: the one form of the scope this big. */
const SECRET_FORM_LIMIT_BYTES = 3 * MAX_SECRET_VALUE_BYTES + 1024;

export function secretPages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const secrets = createSecretChanges(ctx);

    const render = async (
      request: FastifyRequest,
      reply: FastifyReply,
      session: WalletSession,
      status: number,
      extra: Partial<SecretsModel> = {},
    ) =>
      sendHtml(
        reply,
        status,
        secretsPage(scope.frame(request, session, 'secrets'), {
          secrets: await secrets.store.list(session.user_id),
          recentUntil: recentUntil(session, ctx.clock.now()),
          ...extra,
        }),
      );

    app.get('/secrets', async (request, reply) => render(request, reply, await scope.requireSession(request), 200));

    app.post('/secrets', { bodyLimit: SECRET_FORM_LIMIT_BYTES }, async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      requireRecentSession(session, ctx.clock.now());
      const name = textField(request.body, 'name', 128);
      try {
        // Counted in bytes by the rule itself; the bound here only keeps an absurd field out of it.
        // A browser sends a textarea's line breaks as CRLF whatever was typed or pasted (HTML's form submission):
        // the value is kept with the LF a terminal or a file would have given.
        const value = textField(request.body, 'value', MAX_SECRET_VALUE_BYTES + 1).replaceAll('\r\n', '\n');
        await secrets.set(session.user_id, name.trim(), value, clientSeen(request));
      } catch (error) {
        if (!(error instanceof SvcError) || error.status >= 500) throw error;
        return render(request, reply, session, error.status, { error: { message: sentence(error.message), name } });
      }
      return redirectTo(request, reply, 'secrets');
    });

    app.post('/secrets/remove', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      requireRecentSession(session, ctx.clock.now());
      await secrets.remove(session.user_id, textField(request.body, 'name', 128), clientSeen(request));
      return redirectTo(request, reply, 'secrets');
    });
  };
}

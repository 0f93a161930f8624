// The console's step-up (docs/api.md "Console"): POST {wallet_url}/confirm/send mails a code to the session's address
// (auth/email-codes.ts, the sign-in's own, with its limits) and shows the form for it; POST confirm checks the code,
// spends it, marks the session's sign-in recent and audits it as a sign-in, then leads back to the page it came
// from (one of a fixed few, never a URL from the request). A wrong code is a 401 page with the form again.
import type { FastifyPluginAsync } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { challengeReference, createEmailCodes, invalidCode } from '../../auth/email-codes.js';
import { confirmPage } from '../../console/confirm-page.js';
import { CONFIRM_RETURNS, type ConfirmReturn } from '../../console/recent-sign-in.js';
import { clientSeen } from '../../http/client-seen.js';
import { textField } from '../../wallet-page/form-body.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin, SESSION_COOKIE } from '../../wallet-page/security.js';

const CHALLENGE_PATTERN = /^[0-9a-f-]{36}$/;

export function confirmPages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const codes = createEmailCodes(ctx.store, ctx.clock, ctx.mailer, ctx.secrets.jwtKey, ctx.signInCodesPerClient);
    const returnOf = (body: unknown): ConfirmReturn => {
      const asked = textField(body, 'return', 16);
      if (!(CONFIRM_RETURNS as readonly string[]).includes(asked))
        throw new SvcError('invalid_request', 'this form names no page of the console to return to');
      return asked as ConfirmReturn;
    };

    app.post('/confirm/send', { config: { rateLimited: true } }, async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const returnTo = returnOf(request.body);
      const challenge = await codes.send(session.user_id, clientSeen(request));
      const frame = scope.frame(request, session, returnTo);
      return sendHtml(
        reply,
        200,
        confirmPage(frame, { returnTo, challengeId: challenge.challenge_id, reference: challengeReference(challenge.challenge_id) }),
      );
    });

    app.post('/confirm', { config: { rateLimited: true } }, async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const returnTo = returnOf(request.body);
      const challengeId = textField(request.body, 'challenge_id', 64);
      if (!CHALLENGE_PATTERN.test(challengeId)) throw new SvcError('invalid_request', 'this form names no code that was mailed');
      try {
        await codes.check(challengeId, session.user_id, textField(request.body, 'code', 32));
        await ctx.store.transaction(async () => {
          if (!(await codes.use(challengeId))) throw invalidCode();
          await scope.sessions.confirmInbox(request.cookies[SESSION_COOKIE]!, ctx.clock.now());
          await ctx.audit.record(session.user_id, 'sign_in', clientSeen(request), { via: 'console' });
        });
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'email_code_invalid') throw error;
        const frame = scope.frame(request, session, returnTo);
        const message = `${error.message.charAt(0).toUpperCase()}${error.message.slice(1)}. Type the code of the newest mail, or ask for a new one.`;
        return sendHtml(
          reply,
          401,
          confirmPage(frame, { returnTo, challengeId, reference: challengeReference(challengeId), error: message }),
        );
      }
      return redirectTo(request, reply, returnTo);
    });
  };
}

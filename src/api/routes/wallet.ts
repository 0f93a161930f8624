// spec §4 GET {wallet_url}/login and docs/decisions/0009-wallet-page.md: the browser page where a user signs in to
// the pay wallet with the JWT (routes/wallet/sign-in.ts). The token is exchanged once for a session cookie and
// leaves the address bar by a redirect.
// The signed-in page is the first of the console's (docs/api.md "Console"), whose pages are registered here, in the
// same scope, from routes/wallet/. Every response of this scope is HTML with the headers of security.ts, errors included.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import { SvcError } from '../../contract/errors.js';
import { parseDollarsToCents } from '../../contract/money.js';
import type { ServiceContext } from '../context.js';
import { noteClientGone, toSvcError } from '../http/problem.js';
import { createRecentRuns } from '../wallet-page/recent-runs.js';
import { createWalletTransactions } from '../wallet/transactions.js';
import { MAX_SANDBOX_FUNDING_CENTS, fundThroughSandbox } from '../wallet-page/sandbox-funding.js';
import { SESSION_COOKIE, WALLET_BASE_PATH, assertSameOrigin, cookieScope, setWalletPageHeaders } from '../wallet-page/security.js';
import { type WalletSession } from '../wallet-page/wallet-sessions.js';
import { errorPageOf } from '../wallet-page/error-page.js';
import { createPageScope, sendHtml } from '../wallet-page/page-scope.js';
import { baseOf } from '../wallet-page/relative-links.js';
import { consoleRoutes } from './wallet/console.js';
import { createSignIn } from './wallet/sign-in.js';
import { amountField, parseFormBody } from '../wallet-page/form-body.js';
import { signedInPage, signedOutPage, type SignedInModel } from '../wallet-page/views.js';

/** A form is a few short fields; anything bigger is not from these pages (the secrets and webhooks forms set their own). */
const FORM_BODY_LIMIT_BYTES = 1024;

/** Registered by buildApp; serves the page under WALLET_BASE_PATH in a scope of its own (cookies, forms, errors). */
export function walletPageRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(walletPage(ctx), { prefix: WALLET_BASE_PATH });
  };
}

function walletPage(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    await app.register(fastifyCookie);
    // The forms post urlencoded bodies only; the service's JSON parser stays outside this scope.
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'buffer', bodyLimit: FORM_BODY_LIMIT_BYTES },
      (_request, body, done) => {
        try {
          done(null, parseFormBody(body as Buffer));
        } catch (error) {
          done(error as SvcError, undefined);
        }
      },
    );

    const scope = createPageScope(ctx);
    const { sessions, requireSession } = scope;
    const recentRuns = createRecentRuns(ctx.store);
    const transactions = createWalletTransactions(ctx.store);

    app.addHook('onSend', async (_request, reply, payload) => {
      setWalletPageHeaders(reply);
      return payload;
    });
    app.setErrorHandler((error, request, reply) =>
      noteClientGone(error, request) ? reply : sendErrorPage(request, reply, toSvcError(error)),
    );
    app.setNotFoundHandler((request, reply) =>
      sendErrorPage(request, reply, new SvcError('not_found', `there is no wallet page at ${request.url.split('?')[0]}`)),
    );
    const signIn = createSignIn(scope);
    await app.register(signIn.routes);
    await app.register(consoleRoutes(scope));

    // Relative, so it holds behind a proxy that serves the wallet under another path.
    app.get('/', async (request, reply) =>
      reply.redirect(request.url.split('?')[0]!.endsWith('/') ? 'login' : `${WALLET_BASE_PATH.slice(1)}/login`, 303),
    );

    app.get('/login', { config: { rateLimited: true } }, async (request, reply) => {
      const query = request.query as Record<string, unknown>;
      if (query.token !== undefined) return signIn.fromLink(request, reply, query.token, query.intent);

      const cookie = request.cookies[SESSION_COOKIE];
      const session = await sessions.find(cookie);
      if (session !== undefined) return sendHtml(reply, 200, signedInPage(await signedInModel(session)));
      // A cookie whose session ended (expired, signed out elsewhere) is removed so the browser stops sending it.
      if (cookie !== undefined) clearSessionCookie(request, reply);
      return sendHtml(
        reply,
        200,
        signedOutPage({
          arrivedFromAnotherSite: ['cross-site', 'same-site'].includes(String(request.headers['sec-fetch-site'])),
          ...(cookie === undefined ? {} : { notice: 'Your wallet session has ended. Sign in again.' }),
        }),
      );
    });

    app.post('/logout', async (request, reply) => {
      assertSameOrigin(ctx, request);
      await sessions.revoke(request.cookies[SESSION_COOKIE]);
      clearSessionCookie(request, reply);
      return reply.redirect('login', 303);
    });

    if (ctx.sandbox) {
      app.post('/fund', { config: { rateLimited: true } }, async (request, reply) => {
        assertSameOrigin(ctx, request);
        const session = await requireSession(request);
        const typed = amountField(request.body);
        const cents = typed === undefined ? undefined : parseDollarsToCents(typed);
        if (cents === undefined || cents < 1 || cents > MAX_SANDBOX_FUNDING_CENTS) {
          const message =
            cents === undefined
              ? 'Enter an amount in dollars, for example 10 or 2.50.'
              : `Enter an amount from $0.01 to $${MAX_SANDBOX_FUNDING_CENTS / 100}.00.`;
          return sendHtml(
            reply,
            400,
            signedInPage({ ...(await signedInModel(session)), fundError: { message, amount: (typed ?? '').slice(0, 16) } }),
          );
        }
        const funding = await fundThroughSandbox(ctx, session.user_id, cents);
        if (funding.credited) return reply.redirect('login', 303);
        const notice = `The payment ${funding.payment_id} is confirmed; the provider's webhook has not credited it yet. Reload this page in a moment.`;
        return sendHtml(reply, 202, signedInPage({ ...(await signedInModel(session)), notice }));
      });
    }

    async function signedInModel(session: WalletSession): Promise<SignedInModel> {
      return {
        email: session.user_id,
        tier: session.tier,
        balanceCents: await ctx.ledger.balance(session.user_id),
        sessionExpiresAt: session.expires_at,
        runs: await recentRuns(session.user_id),
        transactions: await transactions(session.user_id),
        sandbox: ctx.sandbox,
      };
    }

    function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
      const scope = cookieScope(ctx, request);
      reply.clearCookie(SESSION_COOKIE, { path: scope.path, secure: scope.secure, httpOnly: true, sameSite: 'strict' });
    }
  };
}

function sendErrorPage(request: FastifyRequest, reply: FastifyReply, error: SvcError): FastifyReply {
  if (error.status >= 500) request.log.error({ err: error.cause ?? error }, 'wallet page failed');
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return sendHtml(reply, error.status, errorPageOf(error, baseOf(request.url)));
}

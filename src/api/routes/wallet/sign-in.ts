// Signing in to the wallet by link (spec §4 GET {wallet_url}/login, docs/api.md "Wallet page"). The link's JWT is
// verified first, always. Typed, a bookmark, or opened by another program (`Sec-Fetch-Site: none`), it signs in at
// once. Followed from a page, another site's perhaps, or from a browser without Fetch Metadata, it only leaves a
// pending sign-in (pending-sign-in.ts) and leads to GET sign-in, "Continue as <address>?", whose button signs in:
// a page cannot sign this browser in to an account of its choosing, and no secret typed afterwards lands there.
// Every way ends in a 303 to the bare login, so the JWT leaves the address bar and the history.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { WALLET_LOGIN_INTENT } from '../../../contract/claims.js';
import { SvcError } from '../../../contract/errors.js';
import { InvalidTokenError } from '../../auth/tokens.js';
import { errorPageOf } from '../../wallet-page/error-page.js';
import { textField } from '../../wallet-page/form-body.js';
import { sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { createPendingSignIns, PENDING_COOKIE, PENDING_SIGN_IN_SECONDS, type PendingSignIn } from '../../wallet-page/pending-sign-in.js';
import { assertSignInFormOrigin, cookieScope, fetchSiteOf, SESSION_COOKIE } from '../../wallet-page/security.js';
import { continuePage } from '../../wallet-page/sign-in-page.js';
import type { SessionClaims, WalletSession } from '../../wallet-page/wallet-sessions.js';

const MAX_TOKEN_LENGTH = 8192;
/** RFC 5321's longest path, with room: the replace field holds the address of the session it switches from. */
const MAX_ADDRESS_CHARS = 320;

export interface SignIn {
  routes: FastifyPluginAsync;
  /** GET login?token=…&intent=… */
  fromLink(request: FastifyRequest, reply: FastifyReply, token: unknown, intent: unknown): Promise<FastifyReply>;
}

export function createSignIn(scope: PageScope): SignIn {
  const { ctx, sessions } = scope;
  const pending = createPendingSignIns(ctx.clock, ctx.secrets.jwtKey);

  const cookieOptions = (request: FastifyRequest, sameSite: 'strict' | 'lax') => {
    const { path, secure } = cookieScope(ctx, request);
    return { httpOnly: true, sameSite, path, secure };
  };
  const clearPending = (request: FastifyRequest, reply: FastifyReply): void => {
    if (request.cookies[PENDING_COOKIE] !== undefined) reply.clearCookie(PENDING_COOKIE, cookieOptions(request, 'lax'));
  };

  async function signInAs(request: FastifyRequest, reply: FastifyReply, claims: SessionClaims): Promise<FastifyReply> {
    // Signing in again (perhaps as someone else) ends the session this browser had.
    await sessions.revoke(request.cookies[SESSION_COOKIE]);
    const session = await sessions.create(claims);
    reply.setCookie(SESSION_COOKIE, session.session_id, {
      ...cookieOptions(request, 'strict'),
      maxAge: Math.max(1, Math.floor((session.expires_at - ctx.clock.now()) / 1000)),
    });
    clearPending(request, reply);
    // 303 to the bare page: the JWT leaves the address bar, and the history entry is the bare page's.
    return reply.redirect('login', 303);
  }

  /** The pending sign-in, while it waits: not expired, and its token not revoked since the link was opened. */
  const stillWaiting = (opened: PendingSignIn | undefined): PendingSignIn | undefined => {
    if (opened === undefined || opened.expires_at <= ctx.clock.now()) return undefined;
    return ctx.revocations.isRevoked(opened.claims.sub, opened.claims.jti, opened.opened_at) ? undefined : opened;
  };

  /** The page that says to open the link again; the cookie that held nothing usable goes. */
  function nothingWaiting(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    clearPending(request, reply);
    const minutes = PENDING_SIGN_IN_SECONDS / 60;
    const error = new SvcError(
      'invalid_request',
      `No sign-in is waiting in this browser: a sign-in link opened from a page waits ${minutes} minutes for its button. ` +
        'Open the link again.',
    );
    return sendHtml(reply, error.status, errorPageOf(error, ''));
  }

  /** The address of the browser's session when it is another account's than the one the link signs in as. */
  const otherAccount = (session: WalletSession | undefined, link: PendingSignIn): string | undefined =>
    session === undefined || session.user_id === link.user_id ? undefined : session.user_id;

  return {
    async fromLink(request, reply, token, intent) {
      const claims = await verifiedLink(token, intent);
      if (fetchSiteOf(request) === 'none') return signInAs(request, reply, claims);
      const sealed = pending.seal(claims);
      // Lax, not Strict: it must reach GET sign-in at the end of a navigation from another site. A form another site
      // posts never carries it (Lax), and could not carry the form's token made from it.
      reply.setCookie(PENDING_COOKIE, sealed.value, { ...cookieOptions(request, 'lax'), maxAge: sealed.maxAgeSeconds });
      return reply.redirect('sign-in', 303);
    },

    routes: async (app) => {
      app.get('/sign-in', { config: { rateLimited: true } }, async (request, reply) => {
        if (request.cookies[PENDING_COOKIE] === undefined) return reply.redirect('login', 303);
        const link = stillWaiting(pending.open(request.cookies[PENDING_COOKIE]));
        if (link === undefined) return nothingWaiting(request, reply);
        // At the end of a navigation from another site the Strict session cookie is held back, so the page may not
        // know of a session; the POST does, and asks again below.
        const signedInAs = otherAccount(await sessions.find(request.cookies[SESSION_COOKIE]), link);
        const model = { email: link.user_id, formToken: pending.formToken(link), ...(signedInAs === undefined ? {} : { signedInAs }) };
        return sendHtml(reply, 200, continuePage(model));
      });

      app.post('/sign-in', { config: { rateLimited: true } }, async (request, reply) => {
        const opened = pending.open(request.cookies[PENDING_COOKIE]);
        assertSignInFormOrigin(ctx, request, () => pending.formTokenMatches(opened, textField(request.body, 'form_token', 64)));
        const link = stillWaiting(opened);
        if (link === undefined) return nothingWaiting(request, reply);
        const signedInAs = otherAccount(await sessions.find(request.cookies[SESSION_COOKIE]), link);
        // The session this form would end must be the one its page named: else the page asks whether to switch.
        if (signedInAs !== undefined && textField(request.body, 'replace', MAX_ADDRESS_CHARS) !== signedInAs) {
          return sendHtml(reply, 200, continuePage({ email: link.user_id, signedInAs, formToken: pending.formToken(link) }));
        }
        return signInAs(request, reply, link.claims);
      });
    },
  };

  async function verifiedLink(token: unknown, intent: unknown) {
    if (typeof token !== 'string' || token === '' || token.length > MAX_TOKEN_LENGTH) {
      throw new SvcError('invalid_request', 'The sign-in link is damaged: it must carry one access token.');
    }
    // A link without intent (typed by hand) is accepted; one naming another purpose is not this page's.
    if (intent !== undefined && intent !== WALLET_LOGIN_INTENT) {
      throw new SvcError('invalid_request', `This link is not a wallet sign-in link: its intent must be ${WALLET_LOGIN_INTENT}.`);
    }
    try {
      return await ctx.tokens.verify(token);
    } catch (error) {
      if (!(error instanceof InvalidTokenError)) throw error;
      throw new SvcError(
        'unauthorized',
        error.reason === 'expired'
          ? 'This sign-in link has expired: the access token in it is no longer valid.'
          : 'This sign-in link is not valid: the access token in it could not be verified.',
      );
    }
  }
}

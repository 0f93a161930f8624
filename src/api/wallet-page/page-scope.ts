// What every route of the wallet's scope shares (the wallet page and the console, docs/api.md "Console"): the
// sessions, the signed-in session a page needs (else the 401 page), the frame of a console page, and HTML answers.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SvcError } from '../../contract/errors.js';
import type { ServiceContext } from '../context.js';
import type { ConsoleFrame, ConsoleSection } from '../console/layout.js';
import { baseOf } from './relative-links.js';
import { SESSION_COOKIE } from './security.js';
import { createWalletSessions, type WalletSession, type WalletSessions } from './wallet-sessions.js';

const HTML = 'text/html; charset=utf-8';

export interface PageScope {
  ctx: ServiceContext;
  sessions: WalletSessions;
  /** The request's live session, or 401 (the error page says how to sign in). */
  requireSession(request: FastifyRequest): Promise<WalletSession>;
  /** The console's frame of a page answered to `request`: its links lead back from the request's own depth. */
  frame(request: FastifyRequest, session: WalletSession, current: ConsoleSection): ConsoleFrame;
}

export function createPageScope(ctx: ServiceContext): PageScope {
  const sessions = createWalletSessions(ctx.store, ctx.clock, ctx.revocations);
  return {
    ctx,
    sessions,
    async requireSession(request) {
      const session = await sessions.find(request.cookies[SESSION_COOKIE]);
      if (session === undefined) throw new SvcError('unauthorized', 'You are not signed in to the wallet, or your session has ended.');
      return session;
    },
    frame: (request, session, current) => ({ email: session.user_id, current, base: baseOf(request.url) }),
  };
}

export function sendHtml(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.status(status).type(HTML).send(body);
}

/** After a change, the page that shows it (Post/Redirect/Get: a reload never sends the form again). */
export function redirectTo(request: FastifyRequest, reply: FastifyReply, target: string): FastifyReply {
  return reply.redirect(`${baseOf(request.url)}${target}`, 303);
}

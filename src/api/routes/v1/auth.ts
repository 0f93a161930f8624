// spec §4, §5: POST /v1/auth/issue-token and POST /v1/auth/verify, with the sign-in around them (docs/api.md
// "Sign-in: a verified inbox", "Revocation and sessions"): POST /v1/auth/email-code mails the code issue-token
// needs; POST /v1/auth/logout revokes the caller's token, or every token of the user. Rate-limited per client address.
import type { FastifyPluginAsync } from 'fastify';
import { EmailCodeRequest, EmailCodeResponse, LogoutRequest, LogoutResponse } from '../../../contract/auth.js';
import { SvcError } from '../../../contract/errors.js';
import { IssueTokenRequest, IssueTokenResponse, VerifyRequest, VerifyResponse } from '../../../contract/schemas.js';
import { isoTime } from '../../../lib/clock.js';
import { createAccessTokens } from '../../auth/access-tokens.js';
import { MAX_CODE_ATTEMPTS } from '../../auth/email-codes.js';
import { parseBearer, userOf } from '../../http/auth.js';
import { clientSeen } from '../../http/client-seen.js';
import type { ServiceContext } from '../../context.js';
import { acceptJsonBodiesOnly } from '../../http/json-body.js';
import { pauseRevokedSchedules } from '../../schedules/revocation-pause.js';
import { schedulesPausedMail } from '../../schedules/schedule-mail.js';
import { runInBackground } from '../../context.js';

export function authRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    // verify may carry the token in the header alone, so its body may be empty; so may logout's.
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const accessTokens = createAccessTokens(ctx);

    // The same answer for every address, known or not: whether one has paid or signed in is not told to a stranger.
    app.post<{ Body: EmailCodeRequest }>(
      '/v1/auth/email-code',
      { config: { rateLimited: true }, schema: { body: EmailCodeRequest, response: { 202: EmailCodeResponse } } },
      async (request, reply) => {
        const challenge = await accessTokens.emailCodes.send(request.body.email, clientSeen(request));
        return reply
          .status(202)
          .send({ challenge_id: challenge.challenge_id, expires_at: isoTime(challenge.expires_at), attempts: MAX_CODE_ATTEMPTS });
      },
    );

    app.post<{ Body: IssueTokenRequest }>(
      '/v1/auth/issue-token',
      { config: { rateLimited: true }, schema: { body: IssueTokenRequest, response: { 201: IssueTokenResponse } } },
      async (request, reply) => reply.status(201).send(await accessTokens.issue(request.body, clientSeen(request))),
    );

    app.post<{ Body: VerifyRequest }>(
      '/v1/auth/verify',
      {
        config: { rateLimited: true },
        schema: { body: VerifyRequest, response: { 200: VerifyResponse } },
        preValidation: async (request) => {
          if (request.body === undefined) request.body = {};
        },
      },
      async (request) => accessTokens.verify(tokenToVerify(request.headers.authorization, request.body.token)),
    );

    // Sign out: this token, or (everywhere) every token of the user issued before now. No step-up: ending sessions
    // is what someone whose token was copied needs to do at once, and it gives a thief nothing.
    app.post<{ Body: LogoutRequest }>(
      '/v1/auth/logout',
      {
        config: { auth: 'access-token' },
        schema: { body: LogoutRequest, response: { 200: LogoutResponse } },
        preValidation: async (request) => {
          if (request.body === undefined) request.body = {};
        },
      },
      async (request) => {
        const claims = userOf(request);
        const everywhere = request.body.everywhere === true;
        const revoked = everywhere
          ? await ctx.revocations.revokeUser(claims.sub)
          : (await ctx.revocations.revokeToken(claims.sub, claims.jti!), 1);
        const paused = await pauseRevokedSchedules(ctx, claims.sub, everywhere ? null : claims.jti!);
        if (paused.length > 0)
          runInBackground(ctx, ctx.mailer.send(schedulesPausedMail(claims.sub, paused, 'creator_revoked', ctx.clock.now())));
        await ctx.audit.record(claims.sub, 'tokens_revoked', clientSeen(request), {
          everywhere,
          revoked,
          ...(paused.length === 0 ? {} : { schedules_paused: paused }),
        });
        // Named only when there are some: an answer without schedules is as it was before they existed.
        return { revoked, everywhere, ...(paused.length === 0 ? {} : { schedules_paused: paused }) };
      },
    );
  };
}

/** spec §5.3: the JWT comes as the bearer credential and in the body; either alone is enough, two must agree. */
function tokenToVerify(authorization: string | undefined, bodyToken: string | undefined): string {
  const bearer = parseBearer(authorization);
  // Verify answers every token question with 200; a header it cannot read is a malformed request.
  if (bearer.kind === 'malformed') throw new SvcError('invalid_request', 'the Authorization header must be "Bearer <JWT>"');
  const headerToken = bearer.kind === 'token' ? bearer.token : undefined;
  if (headerToken === undefined && bodyToken === undefined) {
    throw new SvcError('invalid_request', 'send the JWT as Authorization: Bearer <JWT> and/or in the body field token');
  }
  if (headerToken !== undefined && bodyToken !== undefined && headerToken !== bodyToken) {
    throw new SvcError('invalid_request', 'the Authorization header and the body field token carry different tokens');
  }
  return (headerToken ?? bodyToken)!;
}

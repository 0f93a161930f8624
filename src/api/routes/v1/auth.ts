// spec §4, §5: POST /v1/auth/issue-token and POST /v1/auth/verify. Rate-limited per client address.
import type { FastifyPluginAsync } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import { IssueTokenRequest, IssueTokenResponse, VerifyRequest, VerifyResponse } from '../../../contract/schemas.js';
import { createAccessTokens } from '../../auth/access-tokens.js';
import { nodeOf, parseBearer } from '../../http/auth.js';
import type { ServiceContext } from '../../context.js';
import { acceptJsonBodiesOnly } from '../../http/json-body.js';

export function authRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    // verify may carry the token in the header alone, so its body may be empty.
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const accessTokens = createAccessTokens(ctx);

    app.post<{ Body: IssueTokenRequest }>(
      '/v1/auth/issue-token',
      // An enrolled node may prove the payment with its node credential as the bearer (proof-of-payment.ts).
      { config: { rateLimited: true, auth: 'optional-node' }, schema: { body: IssueTokenRequest, response: { 201: IssueTokenResponse } } },
      async (request, reply) => reply.status(201).send(await accessTokens.issue(request.body, nodeOf(request))),
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

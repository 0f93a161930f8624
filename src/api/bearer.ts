// Bearer credentials (RFC 6750) for the routes that need an access token or a deploy token.
import type { FastifyRequest } from 'fastify';
import type { AccessTokenClaims } from '../contract/claims.js';
import { SvcError } from '../contract/errors.js';
import type { ServiceContext } from './context.js';

/** The bearer credential, undefined when the header is absent; a malformed header is an error. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i.exec(header.trim());
  if (!match) throw new SvcError('unauthorized', 'the Authorization header must be "Bearer <token>"');
  return match[1];
}

/** The claims of the request's valid access token; 401 otherwise. */
export async function requireAccessToken(ctx: ServiceContext, request: FastifyRequest): Promise<AccessTokenClaims> {
  const token = bearerToken(request);
  if (token === undefined) throw new SvcError('unauthorized', 'this endpoint needs an access token: Authorization: Bearer <JWT>');
  return ctx.tokens.verify(token);
}

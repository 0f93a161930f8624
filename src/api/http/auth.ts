// Who is calling (docs/api.md "Authentication", "Scopes"). A route names the credential it takes in its config
// (`auth`), and one onRequest hook checks it before the body is read, so a caller without one learns nothing about
// the request. A route that changes the fleet or the code also says `stepUp`: its JWT must come from a recent sign-in
// (auth/step-up.ts). Handlers read the verified caller with userOf / nodeOf. Deploy tokens (enroll) and verify's
// token-in-the-body are the two endpoints that read the bearer themselves, through parseBearer.
import type { FastifyRequest, onRequestHookHandler } from 'fastify';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { ServiceContext } from '../context.js';
import { createNodeAuthenticator, isNodeCredential, type EnrolledNode } from '../nodes/credentials.js';
import { requireRecentSignIn } from '../auth/step-up.js';

/** What a route takes as its bearer credential. */
export type AuthScheme =
  /** The user's JWT. */
  | 'access-token'
  /** An enrolled node's own credential: the node's own work, nothing else (docs/api.md "Scopes"). */
  | 'node'
  /** The user's JWT, or a node's credential for the node's own share of it (its runs, its bundles, the balance). */
  | 'access-token-or-node'
  /** A public route that answers more to a caller who brings either (the catalog with their own agents). */
  | 'optional';

export type Caller = { kind: 'user'; claims: AccessTokenClaims } | { kind: 'node'; node: EnrolledNode };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The credential this route takes, checked by authHook before the body is read. */
    auth?: AuthScheme;
    /** A JWT from a sign-in within the last 15 minutes (auth/step-up.ts): the route changes the fleet or the code. */
    stepUp?: boolean;
  }
  interface FastifyRequest {
    /** The verified caller of a route with `auth` in its config. */
    caller?: Caller;
  }
}

export type Bearer = { kind: 'absent' } | { kind: 'malformed' } | { kind: 'token'; token: string };

/** RFC 6750 §2.1: "Bearer" and a b64token. */
const BEARER = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i;

export function parseBearer(header: string | undefined): Bearer {
  if (header === undefined) return { kind: 'absent' };
  const match = BEARER.exec(header.trim());
  return match === null ? { kind: 'malformed' } : { kind: 'token', token: match[1]! };
}

export function authHook(ctx: ServiceContext): onRequestHookHandler {
  // Remembering the credentials it found, forgotten by the revocation log (nodes/credentials.ts).
  const nodes = createNodeAuthenticator(ctx.store, ctx.revocations);
  return async (request: FastifyRequest) => {
    const scheme = request.routeOptions.config?.auth;
    if (scheme === undefined) return;
    const bearer = parseBearer(request.headers.authorization);
    if (bearer.kind === 'malformed') throw new SvcError('unauthorized', 'the Authorization header must be "Bearer <token>"');
    if (bearer.kind === 'absent') {
      if (scheme === 'optional') return;
      throw new SvcError(
        'unauthorized',
        `this endpoint needs ${scheme === 'node' ? 'a node credential' : 'an access token'}: Authorization: Bearer <${scheme === 'node' ? 'node credential' : 'JWT'}>`,
      );
    }
    if (isNodeCredential(bearer.token)) {
      // The node itself, not its user's JWT: a node's work never depends on a token that expires in 30 days.
      // A node credential does the node's own work only: it never acts as the user (docs/api.md "Scopes").
      if (scheme === 'access-token')
        throw new SvcError(
          'unauthorized',
          "this endpoint needs the user's access token (JWT); a node credential does only the node's own work",
        );
      request.caller = { kind: 'node', node: await nodes.authenticate(bearer.token) };
      return;
    }
    if (scheme === 'node') throw new SvcError('unauthorized', 'this endpoint takes a node credential as its bearer');
    const claims = await ctx.tokens.verify(bearer.token);
    if (request.routeOptions.config?.stepUp === true) requireRecentSignIn(claims, ctx.clock.now());
    request.caller = { kind: 'user', claims };
  };
}

/** The user the verified caller acts for: the JWT's subject, or the node's user. */
export function userIdOf(request: FastifyRequest): string {
  const caller = request.caller;
  if (caller === undefined) throw new Error(`${request.routeOptions.url} read a caller it was not configured to authenticate`);
  return caller.kind === 'user' ? caller.claims.sub : caller.node.user_id;
}

/** The claims of the verified JWT of a route whose `auth` takes one. */
export function userOf(request: FastifyRequest): AccessTokenClaims {
  if (request.caller?.kind !== 'user') throw new Error(`${request.routeOptions.url} read a user it was not configured to authenticate`);
  return request.caller.claims;
}

/** The enrolled node calling a route whose `auth` takes a node credential; undefined for an optional one absent. */
export function nodeOf(request: FastifyRequest): EnrolledNode | undefined {
  return request.caller?.kind === 'node' ? request.caller.node : undefined;
}

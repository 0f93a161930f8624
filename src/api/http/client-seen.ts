// Who a request came from, as the service records it in the audit log and tells a user by mail: the client address
// (the TCP peer, or X-Forwarded-For from a trusted proxy: trust-proxy.ts) and the User-Agent, cut to a sane length
// with its control characters dropped, since both reach a person's terminal and inbox.
import type { FastifyRequest } from 'fastify';
import type { ClientSeen } from '../mail/messages.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client address as it was when the request arrived (rememberClientAddress). */
    clientAddress: string;
  }
}

const MAX_USER_AGENT = 200;

/**
 * onRequest, first of all: the client address while its connection is there. `request.ip` reads the socket's peer
 * each time, and a client gone mid-request (its body sent, then a reset) leaves it undefined for the route, which
 * stored a sign-in code with no client (a NOT NULL refusal, answered 500: bench:fuzz case 377).
 */
export async function rememberClientAddress(request: FastifyRequest): Promise<void> {
  request.clientAddress = request.ip ?? 'unknown';
}

export function clientSeen(request: FastifyRequest): ClientSeen {
  const agent = request.headers['user-agent'];
  const userAgent =
    typeof agent === 'string'
      ? agent
          .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
          .slice(0, MAX_USER_AGENT)
          .trim()
      : '';
  return { client_address: request.clientAddress, user_agent: userAgent === '' ? null : userAgent };
}

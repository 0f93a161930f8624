// Who a request came from, as the service records it in the audit log and tells a user by mail: the client address
// (the TCP peer, or X-Forwarded-For from a trusted proxy: trust-proxy.ts) and the User-Agent, cut to a sane length
// with its control characters dropped, since both reach a person's terminal and inbox.
import type { FastifyRequest } from 'fastify';
import type { ClientSeen } from '../mail/messages.js';

const MAX_USER_AGENT = 200;

export function clientSeen(request: FastifyRequest): ClientSeen {
  const agent = request.headers['user-agent'];
  const userAgent = typeof agent === 'string' ? agent.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').slice(0, MAX_USER_AGENT).trim() : '';
  return { client_address: request.ip, user_agent: userAgent === '' ? null : userAgent };
}

// STUB: filled in by the work on issue 2.
import type { FastifyPluginAsync } from 'fastify';
import type { ServiceContext } from '../context.js';

export function sandboxRoutes(_ctx: ServiceContext): FastifyPluginAsync {
  return async () => {};
}

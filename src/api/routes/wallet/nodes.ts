// GET {wallet_url}/nodes: the console's nodes page (console/nodes-page.ts).
import type { FastifyPluginAsync } from 'fastify';
import { nodesPage } from '../../console/nodes-page.js';
import { createFleetView } from '../../nodes/fleet-view.js';
import { createNodeRegistry } from '../../nodes/registry.js';
import { createRunStore } from '../../runs/run-store.js';
import { sendHtml, type PageScope } from '../../wallet-page/page-scope.js';

export function nodePages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const fleet = createFleetView(scope.ctx, createNodeRegistry(scope.ctx.store), createRunStore(scope.ctx.store));
    app.get('/nodes', async (request, reply) => {
      const session = await scope.requireSession(request);
      return sendHtml(reply, 200, nodesPage(scope.frame(request, session, 'nodes'), await fleet(session.user_id)));
    });
  };
}

// The console's nodes (docs/api.md "Console"): GET {wallet_url}/nodes (console/nodes-page.ts), GET
// nodes/{node_id}/remove (what a removal does, console/node-remove-page.ts) and POST nodes/{node_id}/remove, through
// nodes/node-removal.ts as DELETE /v1/swarm/nodes/{node_id}, and, as there, only with a recent sign-in; POST
// nodes/{node_id}/drain and /resume, as the API's (nodes/node-drain.ts). Another user's node is the same 404 as none.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { SvcError } from '../../../contract/errors.js';
import type { NodeSummary } from '../../../contract/node-protocol.js';
import { ReleasePlatform } from '../../../contract/releases.js';
import { UUID_PATTERN } from '../../../contract/uuid.js';
import { nodeRemovePage } from '../../console/node-remove-page.js';
import { nodesPage, type RunInProgress } from '../../console/nodes-page.js';
import { recentUntil, requireRecentSession } from '../../console/recent-sign-in.js';
import { clientSeen } from '../../http/client-seen.js';
import { createFleetView } from '../../nodes/fleet-view.js';
import { createNodeRemoval, removeByUser } from '../../nodes/node-removal.js';
import { mailNodeRemovalPauses } from '../../schedules/schedule-mail.js';
import { setDrained } from '../../nodes/node-drain.js';
import { createNodeRegistry } from '../../nodes/registry.js';
import { openReleaseDirectory } from '../../releases/release-directory.js';
import { createRunStore } from '../../runs/run-store.js';
import { compareVersions } from '../../../lib/release-manifest.js';
import { redirectTo, sendHtml, type PageScope } from '../../wallet-page/page-scope.js';
import { assertSameOrigin } from '../../wallet-page/security.js';
import type { WalletSession } from '../../wallet-page/wallet-sessions.js';

/** The platforms a release is published for, as the releases' schema has them. */
const RELEASE_PLATFORMS = ReleasePlatform.anyOf.map((platform) => platform.const);

const NODE_ID = new RegExp(UUID_PATTERN);

type NodeRequest = FastifyRequest<{ Params: { node_id: string } }>;

export function nodePages(scope: PageScope): FastifyPluginAsync {
  return async (app) => {
    const { ctx } = scope;
    const fleet = createFleetView(ctx, createNodeRegistry(ctx.store), createRunStore(ctx.store));
    const removal = createNodeRemoval(ctx.store, ctx.revocations, mailNodeRemovalPauses(ctx));
    const releases = ctx.releasesDir === undefined ? undefined : openReleaseDirectory(ctx.releasesDir);
    /** The newest release this service publishes, of any platform (a node does not say its own); undefined: none. */
    const newest = (): string | undefined =>
      RELEASE_PLATFORMS.map((platform) => releases?.latest(platform)?.manifest.version)
        .filter((version): version is string => version !== undefined)
        .sort((a, b) => compareVersions(b, a))[0];

    /** The session's node, or the same 404 as for a node that does not exist. */
    const usersNode = async (request: NodeRequest, session: WalletSession): Promise<NodeSummary> => {
      const nodeId = request.params.node_id;
      const node = NODE_ID.test(nodeId) ? (await fleet(session.user_id)).find((candidate) => candidate.node_id === nodeId) : undefined;
      if (node === undefined) throw new SvcError('not_found', `you have no node ${nodeId.slice(0, 64)}`);
      return node;
    };

    /** The runs each node of the user holds now, as the service's own records say (not the node's word). */
    const inProgress = async (userId: string): Promise<RunInProgress[]> =>
      (
        await ctx.store.db
          .selectFrom('runs')
          .select(['run_id', 'agent_id', 'node_id', 'claimed_at', 'started_at'])
          .where('user_id', '=', userId)
          .where('status', '=', 'running')
          .orderBy('started_at')
          .execute()
      ).map((run) => ({ run_id: run.run_id, agent_id: run.agent_id, node_id: run.node_id!, since: run.claimed_at ?? run.started_at }));

    app.get('/nodes', async (request, reply) => {
      const session = await scope.requireSession(request);
      const frame = scope.frame(request, session, 'nodes');
      const page = nodesPage(frame, await fleet(session.user_id), await inProgress(session.user_id), newest(), ctx.clock.now());
      return sendHtml(reply, 200, page);
    });

    // Drain and resume (nodes/node-drain.ts, as the API's): same origin only, as every form; no recent sign-in, as
    // either is undone by the other. Another user's node is the same 404 as none.
    for (const [action, drain] of [
      ['drain', true],
      ['resume', false],
    ] as const) {
      app.post<{ Params: { node_id: string } }>(`/nodes/:node_id/${action}`, async (request, reply) => {
        assertSameOrigin(ctx, request);
        const session = await scope.requireSession(request);
        const node = await usersNode(request, session);
        const deps = { store: ctx.store, audit: ctx.audit, events: ctx.runEvents };
        const asked = { userId: session.user_id, nodeId: node.node_id, drain, now: ctx.clock.now(), client: clientSeen(request) };
        await setDrained(deps, { ...asked, by: 'console' });
        return redirectTo(request, reply, 'nodes');
      });
    }

    app.get<{ Params: { node_id: string } }>('/nodes/:node_id/remove', async (request, reply) => {
      const session = await scope.requireSession(request);
      const node = await usersNode(request, session);
      return sendHtml(reply, 200, nodeRemovePage(scope.frame(request, session, 'nodes'), node, recentUntil(session, ctx.clock.now())));
    });

    app.post<{ Params: { node_id: string } }>('/nodes/:node_id/remove', async (request, reply) => {
      assertSameOrigin(ctx, request);
      const session = await scope.requireSession(request);
      const node = await usersNode(request, session);
      requireRecentSession(session, ctx.clock.now(), 'removing a node cannot be undone');
      const now = ctx.clock.now();
      await removeByUser(removal, ctx.audit, {
        userId: session.user_id,
        nodeId: node.node_id,
        now,
        client: clientSeen(request),
        by: 'console',
      });
      return redirectTo(request, reply, 'nodes');
    });
  };
}

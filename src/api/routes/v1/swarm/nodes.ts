// /v1/swarm/nodes (docs/api.md "Additions the flow needs" for enroll; docs/api.md "Runs on the node" for the rest):
// - POST enroll, with the deploy token: the node's id and its own credential (shown once);
// - POST deploy-token (the user's JWT): a deploy token for one more node of the user;
// - with the node credential: POST poll (heartbeat, leases, work), GET self (the node as the service sees it),
//   GET self/agents, PUT and DELETE self/agents/{agent_id} (the agents it serves), PUT self/labels (the labels it
//   carries);
// - GET (the user's JWT): the user's fleet; DELETE {node_id}: one of them removed (docs/api.md "Removing a node");
//   POST {node_id}/credential: its credential replaced (docs/api.md "Credential rotation"); both need a recent
//   sign-in, as does the deploy token; POST {node_id}/drain and /resume: it takes no new run, or takes them again
//   (docs/api.md "Draining a node"); DELETE self, with the node credential: the node removes itself (an ephemeral
//   node after its one run).
import type { FastifyPluginAsync } from 'fastify';
import { type Static } from '@sinclair/typebox';
import { isUploadableAgentId } from '../../../../contract/own-agents.js';
import { SvcError } from '../../../../contract/errors.js';
import { DEPLOY_MODE, INSTALL_PATH } from '../../../../contract/claims.js';
import { normalizeLabels } from '../../../../contract/labels.js';
import {
  AgentParams,
  CredentialRotation,
  NodeAgentsResponse,
  NodeDeployToken,
  NodeDrain,
  NodeParams,
  NodeRemoval,
  NodeLabelsRequest,
  NodeLabelsResponse,
  NodesResponse,
  NodeSummary,
  PollRequest,
  PollResponse,
} from '../../../../contract/node-protocol.js';
import { EnrollResponse } from '../../../../contract/schemas.js';
import { isoTime } from '../../../../lib/clock.js';
import type { ServiceContext } from '../../../context.js';
import { nodeOf, parseBearer, userOf } from '../../../http/auth.js';
import { acceptJsonBodiesOnly } from '../../../http/json-body.js';
import { createNodeAuthenticator } from '../../../nodes/credentials.js';
import { createNodeGrant } from '../../../nodes/node-grant.js';
import { createNodeRemoval, removeByUser } from '../../../nodes/node-removal.js';
import { mailNodeRemovalPauses } from '../../../schedules/schedule-mail.js';
import { setDrained } from '../../../nodes/node-drain.js';
import { createFleetView } from '../../../nodes/fleet-view.js';
import { isOnline } from '../../../nodes/registry.js';
import { assertHealthConsistent } from '../../../nodes/node-health.js';
import { createDeployTokens } from '../../../paygate/deploy-tokens.js';
import { createNodeEnrollment, invalidDeployToken } from '../../../paygate/enroll.js';
import { createRuns } from '../../../runs/runs.js';
import { clientSeen } from '../../../http/client-seen.js';
import { credentialRotatedMail, nodeEnrolledMail } from '../../../mail/messages.js';
import { runInBackground } from '../../../context.js';

export function nodeRoutes(ctx: ServiceContext): FastifyPluginAsync {
  return async (app) => {
    acceptJsonBodiesOnly(app, { allowEmpty: true });
    const enrollment = createNodeEnrollment(ctx.store, ctx.clock);
    const credentials = createNodeAuthenticator(ctx.store);
    const runs = createRuns(ctx);
    const deployTokens = createDeployTokens(ctx.store, ctx.clock);
    const grant = createNodeGrant(ctx.store);
    const removal = createNodeRemoval(ctx.store, ctx.revocations, mailNodeRemovalPauses(ctx));
    const fleet = createFleetView(ctx, runs.nodes, runs.store);

    app.post(
      '/v1/swarm/nodes/enroll',
      { config: { rateLimited: true }, schema: { response: { 200: EnrollResponse } } },
      async (request) => {
        const bearer = parseBearer(request.headers.authorization);
        if (bearer.kind === 'malformed') throw invalidDeployToken();
        // Checked before the token is spent: a body it cannot read enrolls nothing.
        const enrolled = await enrollment.enroll(bearer.kind === 'token' ? bearer.token : undefined, enrollOptions(request.body));
        const client = clientSeen(request);
        await ctx.audit.record(enrolled.user_id, 'node_enrolled', client, {
          node_id: enrolled.node_id,
          ephemeral: enrolled.ephemeral === true,
        });
        // The user hears of every node that joins the account: a deploy token misused is seen at once.
        runInBackground(ctx, ctx.mailer.send(nodeEnrolledMail(enrolled.user_id, enrolled.node_id, ctx.clock.now(), client)));
        return enrolled;
      },
    );

    // A node more for the signed-in user: its tier must buy execution (a wallet top-up installs no node).
    app.post(
      '/v1/swarm/nodes/deploy-token',
      { config: { auth: 'access-token', stepUp: true, rateLimited: true }, schema: { response: { 201: NodeDeployToken } } },
      async (request, reply) => {
        const owner = await grant(userOf(request));
        const issued = await deployTokens.replaceForUser(owner);
        await ctx.audit.record(owner.user_id, 'deploy_token_issued', clientSeen(request), { tier_id: owner.tier_id });
        reply.code(201);
        return {
          deploy_token: issued.token,
          deploy_token_expires_at: isoTime(issued.expires_at),
          tier_id: owner.tier_id,
          install_path: INSTALL_PATH,
          deploy_mode: DEPLOY_MODE,
        };
      },
    );

    app.post<{ Body: PollRequest }>(
      '/v1/swarm/nodes/poll',
      { config: { auth: 'node' }, schema: { body: PollRequest, response: { 200: PollResponse } } },
      async (request, reply) => {
        // The connection closing before the answer is sent: the node was killed or cut off mid-poll.
        const gone = new AbortController();
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) gone.abort();
        });
        // Refused before anything of the poll is written: a bad health changes nothing, heartbeat included.
        assertHealthConsistent(request.body.health);
        return runs.dispatch.poll(nodeOf(request)!, request.body, ctx.drainSignal, gone.signal);
      },
    );

    // A daemon that stops cleanly says so (docs/api.md "The queue"): offline at once, so nothing is routed to it as if
    // it were there; its runs still queued wait for it or another node. Its next poll makes it online again.
    app.post('/v1/swarm/nodes/self/offline', { config: { auth: 'node' } }, async (request, reply) => {
      const node = nodeOf(request)!;
      await runs.nodes.markOffline(node.node_id, ctx.clock.now());
      // As its credential is remembered here (nodes/credentials.ts): never seen since, so its next poll writes at once.
      node.seen = { ...node.seen, at: null };
      return reply.code(204).send();
    });

    // The node as the service sees it, asked with its own credential (docs/api.md "Runs on the node"): what its user's
    // fleet says of it, online by the service's window. `swarm-node doctor` asks it on a node nobody is signed in on.
    // Asking is not a poll: it does not make the node seen. A removed node's credential is 410, as its poll is.
    app.get('/v1/swarm/nodes/self', { config: { auth: 'node' }, schema: { response: { 200: NodeSummary } } }, async (request) => {
      const node = nodeOf(request)!;
      const self = (await fleet(node.user_id)).find((each) => each.node_id === node.node_id);
      if (self === undefined) throw new SvcError('not_found', `node ${node.node_id} is not among its user's nodes`);
      return self;
    });

    // What the service routes to this node: the daemon brings it in line with its registrations.
    app.get(
      '/v1/swarm/nodes/self/agents',
      { config: { auth: 'node' }, schema: { response: { 200: NodeAgentsResponse } } },
      async (request) => {
        const node = nodeOf(request)!;
        return { node_id: node.node_id, agents: await runs.nodes.agentsOf(node.node_id) };
      },
    );

    const agentRoute = { config: { auth: 'node' as const }, schema: { params: AgentParams, response: { 200: NodeAgentsResponse } } };
    app.put<{ Params: Static<typeof AgentParams> }>('/v1/swarm/nodes/self/agents/:agent_id', agentRoute, async (request) => {
      const node = nodeOf(request)!;
      // A catalog agent, or an agent of the user's own (its runs need a current upload, checked at execute).
      if (!isUploadableAgentId(request.params.agent_id))
        throw new SvcError('agent_not_found', `no agent ${JSON.stringify(request.params.agent_id)}`);
      await runs.nodes.serve(node.node_id, request.params.agent_id, ctx.clock.now());
      // A queued run of this agent is the node's to take from now on: its polls look again.
      ctx.runEvents.queued(node.user_id);
      return { node_id: node.node_id, agents: await runs.nodes.agentsOf(node.node_id) };
    });
    // Withdrawing an agent the node does not serve changes nothing and is no error (unregister may be repeated).
    app.delete<{ Params: Static<typeof AgentParams> }>('/v1/swarm/nodes/self/agents/:agent_id', agentRoute, async (request) => {
      const node = nodeOf(request)!;
      await runs.nodes.withdraw(node.node_id, request.params.agent_id);
      return { node_id: node.node_id, agents: await runs.nodes.agentsOf(node.node_id) };
    });

    // The node's whole set, replacing the one before: the node's config is the truth, and a repeat changes nothing.
    app.put<{ Body: NodeLabelsRequest }>(
      '/v1/swarm/nodes/self/labels',
      { config: { auth: 'node' }, schema: { body: NodeLabelsRequest, response: { 200: NodeLabelsResponse } } },
      async (request) => {
        const node = nodeOf(request)!;
        await runs.nodes.setLabels(node.node_id, normalizeLabels(request.body.labels));
        // A queued run that needs the labels this node now carries is the node's to take at its next poll.
        ctx.runEvents.queued(node.user_id);
        return { node_id: node.node_id, labels: await runs.nodes.labelsOf(node.node_id) };
      },
    );

    // Rotation by the user, not by the node: a node credential alone (a taken-over host) cannot keep or take the node.
    app.post<{ Params: Static<typeof NodeParams> }>(
      '/v1/swarm/nodes/:node_id/credential',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: NodeParams, response: { 200: CredentialRotation } } },
      async (request) => {
        const userId = userOf(request).sub;
        const { node_id: nodeId } = request.params;
        const credential = await credentials.replace(userId, nodeId);
        if (credential === undefined) throw new SvcError('not_found', `you have no node ${nodeId}`, { remedy: 'Yours: swarm-node nodes.' });
        const client = clientSeen(request);
        await ctx.audit.record(userId, 'credential_rotated', client, { node_id: nodeId });
        runInBackground(ctx, ctx.mailer.send(credentialRotatedMail(userId, nodeId, ctx.clock.now(), client)));
        return { node_id: nodeId, node_credential: credential };
      },
    );

    app.get('/v1/swarm/nodes', { config: { auth: 'access-token' }, schema: { response: { 200: NodesResponse } } }, async (request) => ({
      nodes: await fleet(userOf(request).sub),
    }));

    // The node's own removal (docs/api.md "Ephemeral nodes"): as the user's, answered the same way.
    app.delete('/v1/swarm/nodes/self', { config: { auth: 'node' }, schema: { response: { 200: NodeRemoval } } }, async (request) => {
      const node = nodeOf(request)!;
      const removed = await removal.bySelf(node.node_id, ctx.clock.now());
      await ctx.audit.record(node.user_id, 'node_removed', clientSeen(request), { node_id: node.node_id, by: 'node' });
      return {
        node_id: removed.node_id,
        removed_at: isoTime(removed.removed_at),
        was_online: true,
        agents_withdrawn: removed.agents_withdrawn,
      };
    });

    // Drain and resume (docs/api.md "Draining a node"): no recent sign-in, unlike removal, as both are undone by the
    // other and change neither the fleet nor any code. Another user's node is the same 404 as an unknown id.
    for (const [action, drain] of [
      ['drain', true],
      ['resume', false],
    ] as const) {
      app.post<{ Params: Static<typeof NodeParams> }>(
        `/v1/swarm/nodes/:node_id/${action}`,
        { config: { auth: 'access-token' }, schema: { params: NodeParams, response: { 200: NodeDrain } } },
        async (request) => {
          const { node_id: nodeId } = request.params;
          const userId = userOf(request).sub;
          const deps = { store: ctx.store, audit: ctx.audit, events: ctx.runEvents };
          const changed = await setDrained(deps, { userId, nodeId, drain, now: ctx.clock.now(), client: clientSeen(request), by: 'user' });
          if (changed === undefined) throw new SvcError('not_found', `you have no node ${nodeId}`, { remedy: 'Yours: swarm-node nodes.' });
          return { ...changed, drained_at: changed.drained_at === null ? null : isoTime(changed.drained_at) };
        },
      );
    }

    // Another user's node is the same 404 as an unknown id: a node id says nothing about whether it exists.
    app.delete<{ Params: Static<typeof NodeParams> }>(
      '/v1/swarm/nodes/:node_id',
      { config: { auth: 'access-token', stepUp: true }, schema: { params: NodeParams, response: { 200: NodeRemoval } } },
      async (request) => {
        const { node_id: nodeId } = request.params;
        const userId = userOf(request).sub;
        const now = ctx.clock.now();
        const removed = await removeByUser(removal, ctx.audit, { userId, nodeId, now, client: clientSeen(request), by: 'user' });
        if (removed === undefined) throw new SvcError('not_found', `you have no node ${nodeId}`, { remedy: 'Yours: swarm-node nodes.' });
        return {
          node_id: removed.node_id,
          removed_at: isoTime(removed.removed_at),
          was_online: isOnline(removed, removed.removed_at - ctx.runTiming.leaseMs),
          agents_withdrawn: removed.agents_withdrawn,
        };
      },
    );
  };
}

/**
 * POST enroll's optional body: `ephemeral`, a boolean, is read; the rest is ignored, as every body was before it
 * existed. An `ephemeral` of another type is refused before the token is spent.
 */
function enrollOptions(body: unknown): { ephemeral: boolean } {
  const ephemeral = typeof body === 'object' && body !== null ? (body as { ephemeral?: unknown }).ephemeral : undefined;
  if (ephemeral !== undefined && typeof ephemeral !== 'boolean') {
    throw new SvcError('invalid_request', 'ephemeral must be true or false; the deploy token was not used', {
      remedy: 'Send no body, or {"ephemeral": true} to enroll a node that takes one run.',
    });
  }
  return { ephemeral: ephemeral === true };
}

// An addition (docs/api.md "Additions the flow needs"): GET /v1/swarm/agents, the SKU catalog of spec §2. Public:
// prices are not secret. A caller who brings a credential (the JWT, or a node's) also sees the agents of their own
// they can run, at their price (docs/api.md "Agents of one's own"). GET /v1/swarm/agents/{agent_id} is one of them
// as the caller's run would execute it: the input_schema the run's input is checked against, before it fails on it.
import type { Static } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { AgentParams } from '../../../../contract/node-protocol.js';
import { AgentDetailResponse, AgentsResponse } from '../../../../contract/schemas.js';
import { SvcError } from '../../../../contract/errors.js';
import { createAgentPrices } from '../../../agents/agent-prices.js';
import { createAgentVersions } from '../../../agents/agent-versions.js';
import { builtInSchema } from '../../../agents/builtin-schemas.js';
import type { ServiceContext } from '../../../context.js';
import { userIdOf } from '../../../http/auth.js';

export function agentRoutes(ctx: ServiceContext): FastifyPluginAsync {
  const versions = createAgentVersions(ctx.store);
  const prices = createAgentPrices(ctx.store, versions, ctx.uploadLimits.ownAgentPriceCents);
  return async (app) => {
    app.get('/v1/swarm/agents', { config: { auth: 'optional' }, schema: { response: { 200: AgentsResponse } } }, async (request) =>
      prices.catalogFor(request.caller === undefined ? undefined : userIdOf(request)),
    );

    app.get<{ Params: Static<typeof AgentParams> }>(
      '/v1/swarm/agents/:agent_id',
      { config: { auth: 'optional' }, schema: { params: AgentParams, response: { 200: AgentDetailResponse } } },
      async (request): Promise<AgentDetailResponse> => {
        const userId = request.caller === undefined ? undefined : userIdOf(request);
        const { agent_id: agentId } = request.params;
        // The agent as this caller may run it: a SKU for anyone, an agent of their own only for them.
        const agent = (await prices.catalogFor(userId)).find((each) => each.agent_id === agentId);
        if (agent === undefined) throw noAgentToRun(agentId);
        // Read as the input check reads it (agents/input-checks.ts): the current upload, else the built-in agent.
        const current = userId === undefined ? undefined : await versions.current(userId, agentId);
        const schemaJson = current === undefined ? undefined : await versions.schemaOf(userId!, current.digest);
        if (current !== undefined && schemaJson !== undefined) {
          return {
            ...agent,
            source: 'upload',
            version: current.version,
            digest: current.digest,
            input_schema: JSON.parse(schemaJson) as Record<string, unknown>,
          };
        }
        const builtIn = builtInSchema(agentId);
        if (builtIn === undefined) throw noAgentToRun(agentId);
        return { ...agent, source: 'built_in', version: builtIn.version, digest: null, input_schema: builtIn.input_schema };
      },
    );
  };
}

function noAgentToRun(agentId: string): SvcError {
  return new SvcError('agent_not_found', `no agent ${JSON.stringify(agentId)} you can run`, {
    remedy: 'Use an agent_id of the catalog (GET /v1/swarm/agents); an agent of your own is shown to you, signed in.',
  });
}

// The agents this node can run (spec §2 SKU table): the service's catalog when it answers, the built-in one (the
// same contract) when it cannot be reached, so `agents` and `register` work offline.
import { AGENT_SKUS, findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { isOwnAgentId, type CatalogAgent } from '../../contract/own-agents.js';
import type { AgentDetailResponse } from '../../contract/schemas.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import { bundleDirs, findBundle } from '../runner/bundles.js';
import type { ServiceClient } from './service-client.js';

export interface Catalog {
  source: 'service' | 'built-in';
  /** The SKUs, and the user's own agents when a bearer was given (`own: true`). */
  agents: readonly CatalogAgent[];
  /** Why the built-in catalog is shown: the service could not be reached. */
  unreachable?: SvcError;
}

export async function agentCatalog(client: ServiceClient, bearer?: string): Promise<Catalog> {
  try {
    return { source: 'service', agents: await client.agents(bearer) };
  } catch (error) {
    if (!(error instanceof SvcError) || error.code !== 'service_unreachable') throw error;
    return { source: 'built-in', agents: AGENT_SKUS, unreachable: error };
  }
}

/** The agent `agentId` names in the catalog, the caller's own ones included with a bearer (exit 5 listing the ids when there is none). */
export async function findInCatalog(client: ServiceClient, agentId: string, bearer?: string): Promise<CatalogAgent> {
  const agent = (await agentCatalog(client, bearer)).agents.find((sku) => sku.agent_id === agentId);
  if (agent === undefined) throw agentNotFound(agentId);
  return agent;
}

/**
 * The agent and its price: a catalog SKU, or an agent of the caller's own, whose price the service's catalog gives
 * the caller (docs/api.md "Agents of one's own").
 */
export async function agentToRun(client: ServiceClient, agentId: string, bearer?: string): Promise<CatalogAgent> {
  const sku = findAgentSku(agentId);
  if (sku !== undefined) return sku;
  if (!isOwnAgentId(agentId)) throw agentNotFound(agentId);
  return findInCatalog(client, agentId, bearer);
}

export function agentNotFound(agentId: string): SvcError {
  return new SvcError('agent_not_found', `there is no agent "${agentId}"`, {
    remedy: `Use an agent_id from the catalog (swarm-node agents): ${AGENT_SKUS.map((sku) => sku.agent_id).join(', ')}, or an agent of your own once uploaded (it is listed there too).`,
  });
}

/** One agent as a run of the signed-in user would execute it (GET /v1/swarm/agents/{agent_id}). */
export interface AgentShown {
  agent: AgentDetailResponse;
  /** The service could not be reached: what is shown is this node's own bundle of a catalog agent. */
  unreachable?: SvcError;
}

/**
 * The agent, its version and its input_schema: the service's answer (the user's current upload, else the built-in
 * agent), or offline this node's bundle of a catalog agent (`home`'s own, else the package's), which is what the
 * built-in agent runs.
 */
export async function showAgent(client: ServiceClient, agentId: string, bearer: string | undefined, home: string): Promise<AgentShown> {
  try {
    return { agent: await client.agent(agentId, bearer) };
  } catch (error) {
    // The service's remedy names its API; a person here has the catalog command.
    if (error instanceof SvcError && error.code === 'agent_not_found') throw agentNotFound(agentId);
    if (!(error instanceof SvcError) || error.code !== 'service_unreachable') throw error;
    const sku = findAgentSku(agentId);
    if (sku === undefined) throw error;
    const bundle = findBundle(bundleDirs(home, runningPackageDir()), agentId);
    if (bundle === undefined) throw error;
    const { version, input_schema } = bundle.manifest;
    return { agent: { ...sku, source: 'built_in', version, digest: null, input_schema }, unreachable: error };
  }
}

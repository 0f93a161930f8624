// What an agent costs a user, and the catalog a user sees (docs/api.md "Agents of one's own"): a catalog SKU at its
// price of spec §2; an agent of the user's own, while a version of it is current, at the price the operator sets for
// such agents. One place answers both, for execute and for GET /v1/swarm/agents.
import { AGENT_SKUS, findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { isOwnAgentId, ownAgentEntry, type CatalogAgent } from '../../contract/own-agents.js';
import type { Store } from '../store/store.js';
import type { AgentVersions } from './agent-versions.js';

export interface AgentPrices {
  /** The agent `agentId` names for `userId`, with its price; 404 agent_not_found otherwise. */
  agentFor(userId: string, agentId: string): Promise<CatalogAgent>;
  /** The SKUs, then the user's own agents that have a current version. */
  catalogFor(userId: string | undefined): Promise<CatalogAgent[]>;
}

export function createAgentPrices(store: Store, versions: AgentVersions, ownAgentPriceCents: number): AgentPrices {
  return {
    async agentFor(userId, agentId) {
      const sku = findAgentSku(agentId);
      if (sku !== undefined) return sku;
      if (isOwnAgentId(agentId) && (await versions.current(userId, agentId)) !== undefined) return ownAgentEntry(agentId, ownAgentPriceCents);
      throw new SvcError('agent_not_found', `no agent ${JSON.stringify(agentId)}${isOwnAgentId(agentId) ? ': you have no current version of an agent of your own by that id' : ''}`, {
        remedy: isOwnAgentId(agentId) ? `Upload one (swarm-node agent init DIR --id ${agentId}, then swarm-node agent upload DIR).` : 'Use an agent_id of the catalog (GET /v1/swarm/agents).',
      });
    },
    async catalogFor(userId) {
      if (userId === undefined) return [...AGENT_SKUS];
      const own = await store.db.selectFrom('agent_current').select('agent_id').where('user_id', '=', userId).orderBy('agent_id').execute();
      return [...AGENT_SKUS, ...own.filter((row) => isOwnAgentId(row.agent_id)).map((row) => ownAgentEntry(row.agent_id, ownAgentPriceCents))];
    },
  };
}

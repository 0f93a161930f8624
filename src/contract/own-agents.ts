// Agents of one's own (docs/api.md "Agents of one's own"): an agent a user uploads under an id of their choosing,
// not one of the catalog's SKUs. It runs on that user's nodes only (their uploads are theirs alone) and is billed
// per run at the price the service's operator sets for such agents (svc-api --own-agent-price-cents).
import { isAgentId } from './agents.js';

/** Lower-case letters, digits and _; `agent_` starts the catalog's ids, so no own agent can ever take a SKU's id. */
export const OWN_AGENT_ID_PATTERN = '^(?!agent_)[a-z][a-z0-9_]{1,47}$';
const OWN_AGENT_ID = new RegExp(OWN_AGENT_ID_PATTERN);

/**
 * A run of one's own agent costs 2 cents unless the operator says otherwise: half the cheapest catalog agent, since
 * the code and the host are the user's and the service only routes, meters and keeps the bundle; more than nothing,
 * so every run still goes through the ledger, its idempotency and its daily caps like any other.
 */
export const DEFAULT_OWN_AGENT_PRICE_CENTS = 2;

/** The catalog's entry for an agent: a SKU's, or a user's own (`own: true`). */
export interface CatalogAgent {
  agent_id: string;
  name: string;
  price_cents: number;
  own?: boolean;
}

export function isOwnAgentId(value: unknown): value is string {
  return typeof value === 'string' && OWN_AGENT_ID.test(value);
}

/** An id a bundle may be uploaded under: a catalog SKU's (a version of one's own of it) or one's own agent's. */
export function isUploadableAgentId(value: unknown): value is string {
  return isAgentId(value) || isOwnAgentId(value);
}

export function ownAgentEntry(agentId: string, priceCents: number): CatalogAgent {
  return { agent_id: agentId, name: `${agentId} (your own agent)`, price_cents: priceCents, own: true };
}

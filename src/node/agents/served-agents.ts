// Which agents the service routes to this node (docs/api.md "Runs on the node"): the registrations in the node's
// database are the truth, the service's list follows them. `register` and `unregister` tell the service at once; the
// daemon brings the two back in line whenever the service becomes usable (a registration made while it was
// unreachable, a database from before enrollment).
import { SvcError } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { NodeApi } from '../service/node-api.js';
import { listRegistrations } from '../store/registrations.js';

export interface ServedAgentsSync {
  served: string[];
  withdrawn: string[];
}

export async function syncServedAgents(db: SqliteDatabase, api: NodeApi): Promise<ServedAgentsSync> {
  const registered = listRegistrations(db).map((registration) => registration.agent_id);
  const atService = (await api.served()).agents;
  const unknown: string[] = [];
  for (const agentId of registered.filter((id) => !atService.includes(id))) {
    try {
      await api.serve(agentId);
    } catch (error) {
      // An agent the catalog no longer has: not served (its interval is not moved either); the rest go on.
      if (!(error instanceof SvcError && error.code === 'agent_not_found')) throw error;
      unknown.push(agentId);
    }
  }
  const withdrawn = atService.filter((agentId) => !registered.includes(agentId));
  for (const agentId of withdrawn) await api.withdraw(agentId);
  return { served: registered.filter((agentId) => !unknown.includes(agentId)), withdrawn };
}

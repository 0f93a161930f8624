// The signed-in user's nodes, as the service sees them (docs/api.md "Runs on the node"): `swarm-node nodes`, one
// removed (`nodes remove`, docs/api.md "Removing a node"), one drained or resumed (`nodes drain`, `nodes resume`,
// docs/api.md "Draining a node"), and a deploy token for one more node (`enroll` and the wizard on a bare host). All take the user's JWT, never a node credential.
import type { NodeDeployToken, NodeDrain, NodeRemoval, NodesResponse } from '../../contract/node-protocol.js';
import type { ServiceClient } from './service-client.js';

export async function listNodes(
  client: ServiceClient,
  jwt: string,
  thisNodeId: string | undefined,
): Promise<NodesResponse & { this_node_id: string | null }> {
  const fleet = (await client.call<NodesResponse>({ method: 'GET', path: '/v1/swarm/nodes', bearer: jwt, retrySafe: true })).body;
  return { ...fleet, this_node_id: thisNodeId ?? null };
}

/** A repeat revokes the unused token of the one before: safe to retry. */
export async function requestDeployToken(client: ServiceClient, jwt: string): Promise<NodeDeployToken> {
  return (await client.call<NodeDeployToken>({ method: 'POST', path: '/v1/swarm/nodes/deploy-token', bearer: jwt, retrySafe: true })).body;
}

/** The service answers a repeat as it answered the removal: safe to retry. 404 when the user has no such node. */
export async function removeNode(client: ServiceClient, jwt: string, nodeId: string): Promise<NodeRemoval> {
  return (
    await client.call<NodeRemoval>({
      method: 'DELETE',
      path: `/v1/swarm/nodes/${encodeURIComponent(nodeId)}`,
      bearer: jwt,
      retrySafe: true,
    })
  ).body;
}

/**
 * Drains (`drain`) or resumes one of the user's nodes (docs/api.md "Draining a node"): a repeat answers as things are,
 * so it is safe to retry. 404 when the user has no such node.
 */
export async function drainNode(client: ServiceClient, jwt: string, nodeId: string, drain: boolean): Promise<NodeDrain> {
  return (
    await client.call<NodeDrain>({
      method: 'POST',
      path: `/v1/swarm/nodes/${encodeURIComponent(nodeId)}/${drain ? 'drain' : 'resume'}`,
      bearer: jwt,
      retrySafe: true,
    })
  ).body;
}

// An ephemeral node's end (docs/api.md "Ephemeral nodes"): once the service says its one run is over
// (the poll's `retire`), the node withdraws its agents and leaves its user's nodes in one request
// (DELETE /v1/swarm/nodes/self), and the daemon stops as a removed node does: exit 8, which the unit does not restart.
import { SvcError, messageOf } from '../../contract/errors.js';
import type { NodeCaller } from '../work/caller.js';
import type { DaemonLog } from './log.js';

export interface Retired {
  node_id: string;
  agents_withdrawn: string[];
}

/**
 * Removes the node and logs node_retired; a removal whose answer was lost is found done (410 node_removed).
 * Undefined when it failed (logged): the service says `retire` again at the next poll.
 */
export async function retireNode(caller: NodeCaller, log: DaemonLog): Promise<Retired | undefined> {
  const nodeId = caller.node_id;
  let withdrawn: string[];
  try {
    withdrawn = (await caller.executor.api.removeSelf()).agents_withdrawn;
  } catch (error) {
    if (!(error instanceof SvcError && error.code === 'node_removed')) {
      log.warn('retire_failed', { node_id: nodeId, error: messageOf(error), note: 'asked again at the next poll' });
      return undefined;
    }
    withdrawn = [];
  }
  log.info('node_retired', {
    node_id: nodeId,
    agents_withdrawn: withdrawn.join(','),
    note: "ephemeral: its one run is over; removed from its user's nodes",
  });
  return { node_id: nodeId, agents_withdrawn: withdrawn };
}

/** What the daemon ends with (and the CLI exits 8 on). */
export function retiredError(retired: Retired): SvcError {
  return new SvcError('node_removed', `ephemeral node ${retired.node_id} took its one run and removed itself from its user's nodes`, {
    remedy: 'Nothing to do: an ephemeral node runs once. Install a new one for another run (swarm-node install --ephemeral).',
    extensions: { node_id: retired.node_id, retired: true },
  });
}

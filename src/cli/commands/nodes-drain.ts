// swarm-node nodes drain <node_id> and nodes resume <node_id> (docs/api.md "Draining a node"), as `kubectl cordon`
// and `uncordon`: a drained node takes no new run, finishes the ones it holds, and stays online; resumed, it takes
// runs again. The state is the service's: it outlives the node's daemon, its restarts and its host's.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import type { NodeDrain } from '../../contract/node-protocol.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import { contextFor } from '../context.js';

const EXAMPLE_NODE = '3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14';

export function nodesDrainCommand(drain: boolean): Command {
  const name = drain ? 'drain' : 'resume';
  return new Command(name)
    .description(
      drain
        ? 'drain one of your nodes: it takes no new run, finishes the ones it holds, and stays online'
        : 'resume a drained node: it takes runs again',
    )
    .argument('<node_id>', `the node to ${name} (swarm-node nodes lists yours)`)
    .addHelpText(
      'after',
      `
${
  drain
    ? `The service hands the node no new run from now on; the runs it holds go on to their end. It keeps polling,
so it stays online (swarm-node nodes shows it drained). Queued runs go to your other nodes; a run pinned to it
(execute's node_id) waits for its resume, or, with queue_seconds 0, is refused. Draining a drained node changes
nothing. To take a node out for good: swarm-node nodes remove.`
    : `The node takes runs again at once, the ones that waited for it first. Resuming a node that is not drained
changes nothing.`
}

Exit codes: 0 done (or already so), 4 not signed in, 5 no such node of yours, 6 service unreachable.

Example:
  $ swarm-node nodes ${name} ${EXAMPLE_NODE}
  $ swarm-node --json nodes ${name} ${EXAMPLE_NODE} | jq .drained_at`,
    )
    .action(async (nodeId: string, _flags: unknown, command: Command) => {
      const ctx = contextFor(command);
      if (!new RegExp(UUID_PATTERN).test(nodeId)) {
        throw new SvcError('usage', `${JSON.stringify(nodeId)} is not a node id`, {
          remedy: 'Give a node id (a UUID) as your nodes list shows it: swarm-node nodes.',
        });
      }
      const jwt = ctx.requireJwt();
      const { drainNode } = await import('../../node/service/fleet.js');
      const changed = await drainNode(await ctx.client(), jwt.token, nodeId, drain);
      ctx.output.result(changed, (result) => humanDrain(result, drain));
    });
}

function humanDrain(result: NodeDrain, drain: boolean): string {
  if (drain) {
    const since = result.drained_at === null ? '' : ` since ${result.drained_at}`;
    return result.changed
      ? `Drained node ${result.node_id}: it takes no new run; the runs it holds finish. Undo: swarm-node nodes resume ${result.node_id}`
      : `Node ${result.node_id} was already drained${since}: nothing changed.`;
  }
  return result.changed
    ? `Resumed node ${result.node_id}: it takes runs again.`
    : `Node ${result.node_id} was not drained: nothing changed.`;
}

// swarm-node nodes remove <node_id>: one of the signed-in user's nodes leaves their fleet for good (docs/api.md
// "Removing a node"), as the service also does by itself with a node offline too long.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import type { NodeRemoval } from '../../contract/node-protocol.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import { withRecentSignIn } from '../step-up.js';
import { contextFor, type CommandContext } from '../context.js';

interface RemoveFlags {
  yes?: boolean;
}

export interface NodeRemoved extends NodeRemoval {
  /** The node this home runs (its etc/credentials.json): its daemon stops, and the host needs uninstalling. */
  this_node: boolean;
}

export function nodesRemoveCommand(): Command {
  return new Command('remove')
    .description('remove one of your nodes: its agents withdrawn, its credential refused from then on; it cannot be undone')
    .argument('<node_id>', 'the node to remove (swarm-node nodes lists yours)')
    .option('-y, --yes', 'remove without asking (needed when stdin is not a terminal)')
    .addHelpText(
      'after',
      `
The service routes nothing more to the node, and its credential is answered 410 node_removed: to serve again,
the host must be enrolled anew. A run the node holds is failed node_lost and refunded when its lease runs out;
finished runs stay as they are. An online node may be removed: its daemon stops at its next poll, logs
event=node_removed and exits 8, which its unit does not restart. The service removes a node offline for 14 days by
itself (its default, svc-api --stale-node-after). In a terminal it asks first; elsewhere it needs --yes (exit 2
without).

Example:
  $ swarm-node nodes remove 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14
  $ swarm-node --json nodes remove 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14 --yes`,
    )
    .action(async (nodeId: string, flags: RemoveFlags, command: Command) => {
      const ctx = contextFor(command);
      if (!new RegExp(UUID_PATTERN).test(nodeId)) {
        throw new SvcError('usage', `${JSON.stringify(nodeId)} is not a node id`, {
          remedy: 'Give a node id (a UUID) as your nodes list shows it: swarm-node nodes.',
        });
      }
      const jwt = ctx.requireJwt();
      const thisNode = ctx.credentials().node?.node_id === nodeId;
      const { listNodes, removeNode } = await import('../../node/service/fleet.js');
      const client = await ctx.client();
      if (flags.yes !== true) {
        if (!ctx.canPrompt()) {
          throw new SvcError('usage', `removing node ${nodeId} cannot be undone, and there is no terminal to confirm it on`, {
            remedy: `Add --yes to confirm: swarm-node nodes remove ${nodeId} --yes`,
          });
        }
        const node = (await listNodes(client, jwt.token, undefined)).nodes.find((candidate) => candidate.node_id === nodeId);
        if (node === undefined) throw new SvcError('not_found', `you have no node ${nodeId}`, { remedy: 'Yours: swarm-node nodes.' });
        const described = `node ${nodeId}${thisNode ? ' (this host)' : ''} on ${node.hostname ?? 'a host that never polled'}, ${node.online ? 'online' : 'offline'}${node.agents.length > 0 ? `, serving ${node.agents.join(', ')}` : ''}`;
        await confirmRemoval(described);
      }
      const removed: NodeRemoved = { ...(await withRecentSignIn(ctx, (token) => removeNode(client, token, nodeId))), this_node: thisNode };
      ctx.output.result(removed, humanRemoval);
      nextSteps(ctx, removed);
    });
}

async function confirmRemoval(described: string): Promise<void> {
  const { confirmNodeRemoval } = await import('../prompts.js');
  if (!(await confirmNodeRemoval(described))) throw new SvcError('failed', 'not confirmed: nothing was removed');
}

function humanRemoval(removed: NodeRemoved): string {
  const agents =
    removed.agents_withdrawn.length > 0 ? `; the service no longer sends it runs of ${removed.agents_withdrawn.join(', ')}` : '';
  return `Removed node ${removed.node_id}${agents}.`;
}

/** What happens to the node itself now, and what its operator does about it: for people, on stderr. */
function nextSteps(ctx: CommandContext, removed: NodeRemoved): void {
  if (removed.was_online) {
    ctx.output.warn(
      `node ${removed.node_id} was online: its daemon stops at its next poll (exit 8); a run it holds is refunded when its lease runs out`,
    );
  }
  if (removed.this_node) {
    ctx.output.info(
      `This was the node of this host (${ctx.paths.home}): uninstall it (sudo swarm-node uninstall --purge --yes; a home that is not installed, delete it). To serve again, enroll anew with a fresh deploy token (swarm-node activate, then swarm-node install).`,
    );
  }
}

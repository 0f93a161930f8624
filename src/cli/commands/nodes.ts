// swarm-node nodes: the signed-in user's nodes as the service sees them (docs/api.md "Runs on the node");
// `nodes remove` takes one out.
import { Command } from 'commander';
import { contextFor } from '../context.js';
import { shortTime, table } from '../table.js';
import { nodesRemoveCommand } from './nodes-remove.js';

export function nodesCommand(): Command {
  return new Command('nodes')
    .description("list your nodes: each one's host, version, whether it is online, the agents it serves, its labels, its runs today")
    .addHelpText(
      'after',
      `
A node is online while it polls the service (the daemon does, at least every 20 s); one that has not for 45 s is
offline, and runs are not sent to it. A run that names labels goes only to a node with all of them (swarm-node
labels). "runs today" counts the runs it finished since 00:00 UTC. The service removes a node offline for 14 days
(its default, svc-api --stale-node-after); nodes remove removes one now.

Example:
  $ swarm-node nodes
  $ swarm-node nodes --json | jq '.nodes[] | select(.online) | .node_id'
  $ swarm-node nodes --json | jq '.nodes[] | select(.labels | index("gpu")) | .node_id'
  $ swarm-node nodes remove 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14`,
    )
    .addCommand(nodesRemoveCommand())
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { listNodes } = await import('../../node/service/fleet.js');
      const here = ctx.credentials().node?.node_id;
      ctx.output.result(await listNodes(await ctx.client(), jwt.token, here), (result) =>
        result.nodes.length === 0
          ? 'No nodes yet: swarm-node install (or swarm-node enroll) on a host enrolls one.'
          : table(
              ['NODE', 'HOST', 'VERSION', 'STATE', 'LAST SEEN', 'AGENTS', 'LABELS', 'RUNS TODAY'],
              result.nodes.map((node) => [
                `${node.node_id}${node.node_id === here ? ' (here)' : ''}`,
                `${node.hostname ?? '-'}${node.name === null ? '' : ` (${node.name})`}`,
                node.version ?? '-',
                `${node.online ? 'online' : 'offline'}${node.ephemeral === true ? ', ephemeral' : ''}`,
                node.last_seen_at === null ? 'never' : shortTime(node.last_seen_at),
                node.agents.join(', ') || '-',
                node.labels.join(',') || '-',
                String(node.runs_today),
              ]),
              ['left', 'left', 'left', 'left', 'left', 'left', 'left', 'right'],
            ),
      );
    });
}

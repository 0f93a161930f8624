// swarm-node nodes: the signed-in user's nodes as the service sees them (docs/api.md "Runs on the node"), each with
// its host's health as its last poll said it (docs/api.md "Node health"); `nodes drain` and `nodes resume` stop and
// restart its new runs (docs/api.md "Draining a node"), `nodes remove` takes one out.
import { Command } from 'commander';
import { contextFor } from '../context.js';
import { shortTime, table } from '../table.js';
import type { NodeSummary } from '../../contract/node-protocol.js';
import { formatSize, formatSpan, loadText, memoryUsedPercent } from '../../lib/host-figures.js';
import { nodesDrainCommand } from './nodes-drain.js';
import { nodesRemoveCommand } from './nodes-remove.js';

export function nodesCommand(): Command {
  return new Command('nodes')
    .description(
      "list your nodes: each one's host, version, whether it is online or drained, its health, the agents it serves, its labels, its runs today",
    )
    .addHelpText(
      'after',
      `
A node is online while it polls the service (the daemon does, at least every 20 s); one that has not for 45 s is
offline, and runs are not sent to it. A run that names labels goes only to a node with all of them (swarm-node
labels). "runs today" counts the runs it finished since 00:00 UTC. The service removes a node offline for 14 days
(its default, svc-api --stale-node-after); nodes remove removes one now. A drained node (nodes drain) takes no new
run until nodes resume. LOAD (1, 5 and 15 minutes), MEM (in use), DISK FREE (the filesystem of its home) and UPTIME
are what the node said at its last poll, REPORTED how long ago: stale when it is offline; "-" and "not reported" for
a node whose daemon does not say them (older than this one).

Example:
  $ swarm-node nodes
  $ swarm-node nodes --json | jq '.nodes[] | select(.online) | .node_id'
  $ swarm-node nodes --json | jq '.nodes[] | select(.labels | index("gpu")) | .node_id'
  $ swarm-node nodes --json | jq '.nodes[] | select(.drained_at != null) | .node_id'
  $ swarm-node nodes drain 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14
  $ swarm-node nodes remove 3f0c7a52-1d4e-4b8a-9c61-0e2f5d7b8a14`,
    )
    .addCommand(nodesDrainCommand(true))
    .addCommand(nodesDrainCommand(false))
    .addCommand(nodesRemoveCommand())
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { listNodes } = await import('../../node/service/fleet.js');
      const here = ctx.credentials().node?.node_id;
      const now = ctx.clock.now();
      ctx.output.result(await listNodes(await ctx.client(), jwt.token, here), (result) =>
        result.nodes.length === 0
          ? 'No nodes yet: swarm-node install (or swarm-node enroll) on a host enrolls one.'
          : table(
              [
                'NODE',
                'HOST',
                'VERSION',
                'STATE',
                'LAST SEEN',
                'LOAD',
                'MEM',
                'DISK FREE',
                'UPTIME',
                'REPORTED',
                'AGENTS',
                'LABELS',
                'RUNS TODAY',
              ],
              result.nodes.map((node) => [
                `${node.node_id}${node.node_id === here ? ' (here)' : ''}`,
                `${node.hostname ?? '-'}${node.name === null ? '' : ` (${node.name})`}`,
                node.version ?? '-',
                `${node.online ? 'online' : 'offline'}${node.drained_at != null ? ', drained' : ''}${node.ephemeral === true ? ', ephemeral' : ''}`,
                node.last_seen_at === null ? 'never' : shortTime(node.last_seen_at),
                ...healthCells(node, now),
                node.agents.join(', ') || '-',
                node.labels.join(',') || '-',
                String(node.runs_today),
              ]),
              ['left', 'left', 'left', 'left', 'left', 'right', 'right', 'right', 'right', 'left', 'left', 'left', 'right'],
            ),
      );
    });
}

/** LOAD, MEM, DISK FREE, UPTIME and REPORTED of a node: dashes and "not reported" when it never said them. */
function healthCells(node: NodeSummary, now: number): string[] {
  const health = node.health;
  if (health === undefined || health === null) return ['-', '-', '-', '-', 'not reported'];
  const ago = `${formatSpan((now - Date.parse(health.reported_at)) / 1000)} ago`;
  return [
    loadText(health).replace(/ \/ /g, ' '),
    `${memoryUsedPercent(health)}%`,
    health.disk_free_bytes === undefined ? '-' : formatSize(health.disk_free_bytes),
    formatSpan(health.uptime_seconds),
    node.online ? ago : `${ago} (stale)`,
  ];
}

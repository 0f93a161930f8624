// The user's fleet as GET /v1/swarm/nodes and the console's nodes page show it (docs/api.md "Runs on the node"): each
// node's last report, whether it is online (seen within a lease, not stopped since), the agents it serves, its
// labels, the runs it finished today (UTC), its host's health as its last poll said it, and whether it is drained.
import type { NodeSummary } from '../../contract/node-protocol.js';
import { isoTime, startOfUtcDay } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { RunStore } from '../runs/run-store.js';
import { isOnline, type NodeRegistry } from './registry.js';
import { healthReport } from './node-health.js';

export type FleetView = (userId: string) => Promise<NodeSummary[]>;

export function createFleetView(ctx: ServiceContext, nodes: NodeRegistry, runs: RunStore): FleetView {
  return async (userId) => {
    const now = ctx.clock.now();
    const fleet = await nodes.nodesOf(userId);
    const agents = await Promise.all(fleet.map((node) => nodes.agentsOf(node.node_id)));
    const labels = await Promise.all(fleet.map((node) => nodes.labelsOf(node.node_id)));
    const today = await runs.finishedSince(
      fleet.map((node) => node.node_id),
      startOfUtcDay(now),
    );
    return fleet.map((node, index) => ({
      node_id: node.node_id,
      hostname: node.hostname,
      name: node.name,
      version: node.version,
      tier_id: node.tier_id,
      enrolled_at: isoTime(node.enrolled_at),
      last_seen_at: node.last_seen_at === null ? null : isoTime(node.last_seen_at),
      online: isOnline(node, now - ctx.runTiming.leaseMs),
      agents: agents[index]!,
      labels: labels[index]!,
      runs_today: today.get(node.node_id) ?? 0,
      ephemeral: node.ephemeral === 1,
      health: healthReport(node.health_json, node.health_reported_at),
      drained_at: node.drained_at === null ? null : isoTime(node.drained_at),
    }));
  };
}

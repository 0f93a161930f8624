// The user's fleet (docs/api.md "Runs on the node"): what each enrolled node reported at its last poll (its
// heartbeat), which agents it serves, and whether it is online: seen within the lease time.
import type { SqliteDatabase } from '../../lib/sqlite.js';

export interface NodeRow {
  node_id: string;
  user_id: string;
  tier_id: string;
  hostname: string | null;
  version: string | null;
  enrolled_at: number;
  last_seen_at: number | null;
}

export interface NodeRegistry {
  get(nodeId: string): NodeRow | undefined;
  /** The poll: the node is alive, and says what it is. */
  touch(nodeId: string, seen: { hostname?: string; version?: string }, now: number): void;
  serve(nodeId: string, agentId: string, now: number): void;
  withdraw(nodeId: string, agentId: string): void;
  agentsOf(nodeId: string): string[];
  nodesOf(userId: string): NodeRow[];
  /** The user's nodes that serve the agent (the pinned one only, if given), online since `onlineSince`. */
  servingOnline(userId: string, agentId: string, onlineSince: number, pinnedNodeId: string | undefined): NodeRow[];
}

export function isOnline(node: Pick<NodeRow, 'last_seen_at'>, onlineSince: number): boolean {
  return node.last_seen_at !== null && node.last_seen_at >= onlineSince;
}

export function createNodeRegistry(db: SqliteDatabase): NodeRegistry {
  const columns = 'node_id, user_id, tier_id, hostname, version, enrolled_at, last_seen_at';
  const select = db.prepare<[string], NodeRow>(`SELECT ${columns} FROM nodes WHERE node_id = ?`);
  const touch = db.prepare(`UPDATE nodes SET last_seen_at = @now, hostname = coalesce(@hostname, hostname), version = coalesce(@version, version) WHERE node_id = @node_id`);
  const serve = db.prepare('INSERT INTO node_agents (node_id, agent_id, registered_at) VALUES (?, ?, ?) ON CONFLICT (node_id, agent_id) DO NOTHING');
  const withdraw = db.prepare('DELETE FROM node_agents WHERE node_id = ? AND agent_id = ?');
  const agents = db.prepare<[string], { agent_id: string }>('SELECT agent_id FROM node_agents WHERE node_id = ? ORDER BY agent_id');
  const ofUser = db.prepare<[string], NodeRow>(`SELECT ${columns} FROM nodes WHERE user_id = ? ORDER BY enrolled_at, node_id`);
  const serving = db.prepare<[string, string, number, string | null, string | null], NodeRow>(`
    SELECT ${columns.split(', ').map((column) => `n.${column}`).join(', ')} FROM nodes n JOIN node_agents a ON a.node_id = n.node_id
    WHERE n.user_id = ? AND a.agent_id = ? AND n.last_seen_at >= ? AND (? IS NULL OR n.node_id = ?)
    ORDER BY n.last_seen_at DESC`);

  return {
    get: (nodeId) => select.get(nodeId),
    touch: (nodeId, seen, now) => void touch.run({ node_id: nodeId, now, hostname: seen.hostname ?? null, version: seen.version ?? null }),
    serve: (nodeId, agentId, now) => void serve.run(nodeId, agentId, now),
    withdraw: (nodeId, agentId) => void withdraw.run(nodeId, agentId),
    agentsOf: (nodeId) => agents.all(nodeId).map((row) => row.agent_id),
    nodesOf: (userId) => ofUser.all(userId),
    servingOnline: (userId, agentId, onlineSince, pinned) => serving.all(userId, agentId, onlineSince, pinned ?? null, pinned ?? null),
  };
}

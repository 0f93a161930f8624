// The user's fleet (docs/api.md "Runs on the node"): what each enrolled node reported at its last poll (its
// heartbeat, with its host's health), which agents it serves, the labels it carries, whether its user drained it, and
// whether it is online: seen within the lease time, and not stopped since (its daemon's clean stop, POST
// /v1/swarm/nodes/self/offline, until its next poll).
import type { Kysely } from 'kysely';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';
import type { NodeHealth } from '../../contract/node-protocol.js';
import { mayStillTakeRuns } from './ephemeral.js';

export interface NodeRow {
  node_id: string;
  user_id: string;
  tier_id: string;
  hostname: string | null;
  name: string | null;
  version: string | null;
  enrolled_at: number;
  last_seen_at: number | null;
  /** 1: ephemeral (ephemeral.ts). */
  ephemeral: number;
  /** An ephemeral node's one run, once it had it. */
  ephemeral_run_id: string | null;
  /** Its daemon stopped cleanly at this time and has not polled since. */
  offline_at: number | null;
  /** Its last poll's health (contract/node-protocol.ts NodeHealth) as JSON, and when it came; null: never said. */
  health_json: string | null;
  health_reported_at: number | null;
  /** Drained by its user (node-drain.ts): it takes no new run. */
  drained_at: number | null;
}

export interface NodeRegistry {
  get(nodeId: string): Promise<NodeRow | undefined>;
  /** The poll: the node is alive (online again if it had stopped), and says what it is and how its host is. */
  touch(nodeId: string, seen: NodeSaid, now: number): Promise<void>;
  serve(nodeId: string, agentId: string, now: number): Promise<void>;
  withdraw(nodeId: string, agentId: string): Promise<void>;
  agentsOf(nodeId: string): Promise<string[]>;
  /** Its labels, sorted. */
  labelsOf(nodeId: string): Promise<string[]>;
  /** Replaces the node's labels with `labels` (normalised: lowercase, each once). */
  setLabels(nodeId: string, labels: readonly string[]): Promise<void>;
  /** The user's fleet: not the nodes removed from it (node-removal.ts). */
  nodesOf(userId: string): Promise<NodeRow[]>;
  /**
   * The user's nodes that serve the agent (the pinned one only, if given) and carry every one of `labels`
   * (normalised), online since `onlineSince`.
   */
  servingOnline(
    userId: string,
    agentId: string,
    onlineSince: number,
    pinnedNodeId: string | undefined,
    labels?: readonly string[],
  ): Promise<NodeRow[]>;
  /** As servingOnline, online or not: the nodes that could take such a run once they poll (the queue waits for them). */
  serving(userId: string, agentId: string, pinnedNodeId: string | undefined, labels?: readonly string[]): Promise<NodeRow[]>;
  /** Its daemon stopped cleanly: nothing is routed to it as if it were online until it polls again. */
  markOffline(nodeId: string, now: number): Promise<void>;
  /** When its user drained it (node-drain.ts); null: it takes runs. */
  drainedAt(nodeId: string): Promise<number | null>;
}

/** What a poll says of the node: each given replaces what it said before. */
export interface NodeSaid {
  hostname?: string;
  name?: string;
  version?: string;
  health?: NodeHealth;
}

export function isOnline(node: Pick<NodeRow, 'last_seen_at' | 'offline_at'>, onlineSince: number): boolean {
  return node.last_seen_at !== null && node.last_seen_at >= onlineSince && node.offline_at === null;
}

const COLUMNS = [
  'node_id',
  'user_id',
  'tier_id',
  'hostname',
  'name',
  'version',
  'enrolled_at',
  'last_seen_at',
  'ephemeral',
  'ephemeral_run_id',
  'offline_at',
  'health_json',
  'health_reported_at',
  'drained_at',
] as const;

/**
 * The user's nodes that serve the agent and were seen since `onlineSince` (and did not stop since), most recently
 * seen first; with no `onlineSince`, every node of the fleet that serves it and may still take runs.
 */
const servingQuery = (db: Kysely<Tables>, userId: string, agentId: string, onlineSince: number | undefined) =>
  db
    .selectFrom('nodes as n')
    .innerJoin('node_agents as a', 'a.node_id', 'n.node_id')
    .select(COLUMNS.map((column) => `n.${column}` as const))
    .where('n.user_id', '=', userId)
    .where('a.agent_id', '=', agentId)
    // A drained node is not one to take a run now; it may again once resumed, as an offline node once back.
    .$if(onlineSince !== undefined, (query) =>
      query.where('n.last_seen_at', '>=', onlineSince!).where('n.offline_at', 'is', null).where('n.drained_at', 'is', null),
    )
    .where('n.removed_at', 'is', null)
    .where(mayStillTakeRuns('n'))
    .orderBy('n.last_seen_at', 'desc');

export function createNodeRegistry(store: Store): NodeRegistry {
  // Every execute that names no node and no label asks this: compiled once (compiled-once.ts).
  const servingAnyOnline = compiledOnce((db, asked: { userId: string; agentId: string; onlineSince: number }) =>
    servingQuery(db, asked.userId, asked.agentId, asked.onlineSince),
  );
  const servingWith = (
    userId: string,
    agentId: string,
    onlineSince: number | undefined,
    pinned: string | undefined,
    labels: readonly string[],
  ) =>
    servingQuery(store.db, userId, agentId, onlineSince)
      .$if(pinned !== undefined, (query) => query.where('n.node_id', '=', pinned!))
      .$if(labels.length > 0, (query) =>
        query.where(
          (eb) =>
            eb
              .selectFrom('node_labels as l')
              .select(eb.fn.countAll<number>().as('n'))
              .whereRef('l.node_id', '=', 'n.node_id')
              .where('l.label', 'in', [...labels]),
          '=',
          labels.length,
        ),
      )
      .execute();
  return {
    get: (nodeId) => store.db.selectFrom('nodes').select(COLUMNS).where('node_id', '=', nodeId).executeTakeFirst(),
    async touch(nodeId, seen, now) {
      await store.db
        .updateTable('nodes')
        .set({
          last_seen_at: now,
          offline_at: null,
          ...(seen.hostname === undefined ? {} : { hostname: seen.hostname }),
          ...(seen.name === undefined ? {} : { name: seen.name }),
          ...(seen.version === undefined ? {} : { version: seen.version }),
          ...(seen.health === undefined ? {} : { health_json: JSON.stringify(seen.health), health_reported_at: now }),
        })
        .where('node_id', '=', nodeId)
        .execute();
    },
    async serve(nodeId, agentId, now) {
      await store.db
        .insertInto('node_agents')
        .values({ node_id: nodeId, agent_id: agentId, registered_at: now })
        .onConflict((conflict) => conflict.columns(['node_id', 'agent_id']).doNothing())
        .execute();
    },
    async withdraw(nodeId, agentId) {
      await store.db.deleteFrom('node_agents').where('node_id', '=', nodeId).where('agent_id', '=', agentId).execute();
    },
    async agentsOf(nodeId) {
      const rows = await store.db.selectFrom('node_agents').select('agent_id').where('node_id', '=', nodeId).orderBy('agent_id').execute();
      return rows.map((row) => row.agent_id);
    },
    async labelsOf(nodeId) {
      const rows = await store.db.selectFrom('node_labels').select('label').where('node_id', '=', nodeId).orderBy('label').execute();
      return rows.map((row) => row.label);
    },
    setLabels: (nodeId, labels) =>
      store.transaction(async () => {
        // Only what changed: two PUTs at once (several instances) then meet on the same rows, never on a duplicate key.
        await store.db
          .deleteFrom('node_labels')
          .where('node_id', '=', nodeId)
          .$if(labels.length > 0, (query) => query.where('label', 'not in', [...labels]))
          .execute();
        if (labels.length === 0) return;
        await store.db
          .insertInto('node_labels')
          .values(labels.map((label) => ({ node_id: nodeId, label })))
          .onConflict((conflict) => conflict.columns(['node_id', 'label']).doNothing())
          .execute();
      }),
    nodesOf: (userId) =>
      store.db
        .selectFrom('nodes')
        .select(COLUMNS)
        .where('user_id', '=', userId)
        .where('removed_at', 'is', null)
        .orderBy('enrolled_at')
        .orderBy('node_id')
        .execute(),
    servingOnline: async (userId, agentId, onlineSince, pinned, labels = []) =>
      pinned === undefined && labels.length === 0
        ? (await servingAnyOnline(store.db, { userId, agentId, onlineSince })).rows
        : servingWith(userId, agentId, onlineSince, pinned, labels),
    serving: (userId, agentId, pinned, labels = []) => servingWith(userId, agentId, undefined, pinned, labels),
    async markOffline(nodeId, now) {
      await store.db.updateTable('nodes').set({ offline_at: now }).where('node_id', '=', nodeId).execute();
    },
    async drainedAt(nodeId) {
      const row = await store.db.selectFrom('nodes').select('drained_at').where('node_id', '=', nodeId).executeTakeFirst();
      return row?.drained_at == null ? null : Number(row.drained_at);
    },
  };
}

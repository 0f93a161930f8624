// Removing a node from its user's fleet (docs/api.md "Removing a node"), by the user (DELETE /v1/swarm/nodes/{node_id}),
// by itself (DELETE /v1/swarm/nodes/self: an ephemeral node after its one run), or because it has been away too long
// (stale-node-sweeper.ts), as GitHub removes a runner that has not connected for 14 days. The row stays, marked
// removed, so that its credential is answered 410 node_removed (credentials.ts) rather than taken for a forgery, and
// its runs keep naming it. Its agents are withdrawn in the same transaction:
// execute routes nothing more to it, and a queued run only it could take is found stranded by the run sweep. Runs
// are not touched here: one it holds is failed node_lost and refunded once when its lease runs out, as for any node
// that goes away (finish-run.ts), and a settled run stays as it is. Its credential's revocation goes in the log every
// instance tails (auth/revocations.ts), so one that remembered the credential forgets it within a second.
import type { AuditLog } from '../audit/audit-log.js';
import type { Revocations } from '../auth/revocations.js';
import type { ClientSeen } from '../mail/messages.js';
import type { Store } from '../store/store.js';
import { recordScheduleEvent } from '../schedules/schedule-events.js';

export interface RemovedNode {
  node_id: string;
  removed_at: number;
  last_seen_at: number | null;
  offline_at: number | null;
  /** The agents withdrawn by this removal (none when it had been removed before). */
  agents_withdrawn: string[];
  /** The schedules pinned to it that this removal paused (node_removed), to tell the user of. */
  schedules_paused: string[];
}

export interface NodeRemoval {
  /**
   * Removes the user's node; a node removed before is answered as it was removed (a repeat after a lost answer is
   * safe). Undefined when the user has no such node: another user's node is never found, nor said to exist.
   */
  byUser(userId: string, nodeId: string, now: number): Promise<RemovedNode | undefined>;
  /**
   * The node removes itself, with its own credential (DELETE /v1/swarm/nodes/self): an ephemeral node after its one
   * run. Its credential stops working with this answer, so a repeat is answered 410 node_removed.
   */
  bySelf(nodeId: string, now: number): Promise<RemovedNode>;
  /**
   * Removes up to `limit` nodes neither seen (polled; enrolled, for one that never polled) nor running anything of
   * their own since `cutoff`: a node used only by `swarm-node run` on its host never polls, yet is not stale.
   */
  staleSince(cutoff: number, now: number, limit: number): Promise<RemovedNode[]>;
}

/**
 * The user's removal of their node, from the API or the console, audited `node_removed` once: a repeat after a lost
 * answer is answered as the removal was, and is not a second event.
 */
export async function removeByUser(
  removal: NodeRemoval,
  audit: AuditLog,
  removed: { userId: string; nodeId: string; now: number; client: ClientSeen; by: 'user' | 'console' },
): Promise<RemovedNode | undefined> {
  const { userId, nodeId, now } = removed;
  const node = await removal.byUser(userId, nodeId, now);
  if (node !== undefined && node.removed_at === now)
    await audit.record(userId, 'node_removed', removed.client, { node_id: nodeId, by: removed.by });
  return node;
}

const COLUMNS = ['node_id', 'user_id', 'removed_at', 'last_seen_at', 'offline_at'] as const;

/** Told, once the removal committed, of the schedules it paused: the user is mailed (schedules/schedule-mail.ts). */
export type SchedulesPausedNotice = (userId: string, scheduleIds: string[], at: number) => void;

export function createNodeRemoval(store: Store, revocations: Revocations, tell: SchedulesPausedNotice): NodeRemoval {
  /** The notices of a transaction's removals, told after it committed (a retried transaction starts them anew). */
  const told = async <T>(work: (notices: Array<[string, string[]]>) => Promise<T>, now: number): Promise<T> => {
    const notices: Array<[string, string[]]> = [];
    const result = await store.transaction(() => {
      notices.length = 0;
      return work(notices);
    });
    for (const [userId, ids] of notices) tell(userId, ids, now);
    return result;
  };

  /** Withdraws its agents and marks it removed; a node another transaction removed first is left as it is. */
  const remove = async (
    node: { node_id: string; user_id: string; last_seen_at: number | null; offline_at: number | null },
    now: number,
    notices: Array<[string, string[]]>,
  ): Promise<RemovedNode | undefined> => {
    const marked = await store.db
      .updateTable('nodes')
      .set({ removed_at: now })
      .where('node_id', '=', node.node_id)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (marked.numUpdatedRows !== 1n) return undefined;
    const withdrawn = await store.db.deleteFrom('node_agents').where('node_id', '=', node.node_id).returning('agent_id').execute();
    await revocations.revokeNode(node.user_id, node.node_id);
    // A schedule pinned to it has nowhere to run: paused, never rerouted (docs/api.md "Schedules").
    const pinned = await store.db
      .selectFrom('schedules')
      .select(['schedule_id', 'user_id', 'agent_id', 'node_id'])
      .where('node_id', '=', node.node_id)
      .where((eb) => eb.or([eb('paused', '=', 0), eb('pause_reason', '<>', 'node_removed')]))
      .execute();
    await store.db
      .updateTable('schedules')
      .set({ paused: 1, pause_reason: 'node_removed', next_fire_at: null, recheck_at: null, updated_at: now })
      .where('node_id', '=', node.node_id)
      .execute();
    for (const row of pinned)
      await recordScheduleEvent(store, now, 'schedule.paused', { ...row, paused: true, pause_reason: 'node_removed', next_fire_at: null });
    if (pinned.length > 0) notices.push([node.user_id, pinned.map((row) => row.schedule_id)]);
    return {
      ...shown(node),
      removed_at: now,
      agents_withdrawn: withdrawn.map((row) => row.agent_id).sort(),
      schedules_paused: pinned.map((row) => row.schedule_id),
    };
  };

  return {
    byUser: (userId, nodeId, now) =>
      told(async (notices) => {
        const node = await store
          .forUpdate(store.db.selectFrom('nodes').select(COLUMNS).where('node_id', '=', nodeId).where('user_id', '=', userId))
          .executeTakeFirst();
        if (node === undefined) return undefined;
        if (node.removed_at !== null) return { ...shown(node), removed_at: node.removed_at, agents_withdrawn: [], schedules_paused: [] };
        return remove(node, now, notices);
      }, now),

    bySelf: (nodeId, now) =>
      told(async (notices) => {
        const node = await store
          .forUpdate(store.db.selectFrom('nodes').select(COLUMNS).where('node_id', '=', nodeId))
          .executeTakeFirstOrThrow();
        if (node.removed_at !== null) return { ...shown(node), removed_at: node.removed_at, agents_withdrawn: [], schedules_paused: [] };
        return (await remove(node, now, notices)) ?? { ...shown(node), removed_at: now, agents_withdrawn: [], schedules_paused: [] };
      }, now),

    staleSince: (cutoff, now, limit) =>
      told(async (notices) => {
        const query = store.db
          .selectFrom('nodes as n')
          .select(['n.node_id', 'n.user_id', 'n.last_seen_at', 'n.offline_at'])
          .where('n.removed_at', 'is', null)
          .where((eb) => eb(eb.fn.coalesce('n.last_seen_at', 'n.enrolled_at'), '<', cutoff))
          .where((eb) =>
            eb.not(
              eb.exists(
                eb
                  .selectFrom('runs as r')
                  .select(eb.lit(1).as('one'))
                  .whereRef('r.node_id', '=', 'n.node_id')
                  .where((inner) => inner.or([inner('r.finished_at', 'is', null), inner('r.finished_at', '>=', cutoff)])),
              ),
            ),
          )
          .orderBy('n.node_id')
          .limit(limit);
        // Several instances sweeping at once (PostgreSQL) each take the nodes the others have not locked: none waits
        // for another, and a node is removed once. A poll that lands meanwhile makes its node no longer match.
        const stale = await (store.engine === 'postgres' ? query.forUpdate().skipLocked() : query).execute();
        const removed: RemovedNode[] = [];
        for (const node of stale) {
          const done = await remove(node, now, notices);
          if (done !== undefined) removed.push(done);
        }
        return removed;
      }, now),
  };
}

/** A node's row as a removal answers it: without its user. */
function shown<T extends { user_id: string }>(node: T): Omit<T, 'user_id'> {
  const { user_id: _user, ...rest } = node;
  return rest;
}

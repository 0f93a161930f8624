// Draining a node (docs/api.md "Draining a node"; docs/decisions/0035-node-health-and-drain.md), as `kubectl
// cordon`/`drain` and a paused GitHub runner: the user's node takes no new run (every claim skips it: run-store.ts
// claimableRuns), the runs it holds go on to their end, and it stays online, polling. Resumed, it takes runs again at
// once: its held polls are woken to look. The state is the service's, so it outlives the node's daemon and host. One
// function for the API (POST /v1/swarm/nodes/{node_id}/drain, /resume) and the console's forms, audited once per
// change: a repeat answers as things are and records nothing.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { SvcError } from '../../contract/errors.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ClientSeen } from '../mail/messages.js';
import type { RunEvents } from '../runs/run-events.js';
import type { Store } from '../store/store.js';
import { isoTime } from '../../lib/clock.js';

/** SQL: the node takes new runs (it is not drained); the condition every claim holds. */
export function takesNewRuns(nodeId: string): RawBuilder<SqlBool> {
  return sql<SqlBool>`NOT EXISTS (SELECT 1 FROM nodes dn WHERE dn.node_id = ${nodeId} AND dn.drained_at IS NOT NULL)`;
}

/** A drained node's own run (swarm-node run on it, its daemon's schedules): refused before anything is charged. */
export function nodeDrainedError(nodeId: string, drainedAt: number): SvcError {
  return new SvcError('node_drained', `node ${nodeId} is drained (since ${isoTime(drainedAt)}): it takes no new run; nothing was charged`, {
    remedy: `Resume it (swarm-node nodes resume ${nodeId}), then run again.`,
    extensions: { node_id: nodeId, drained_at: isoTime(drainedAt) },
  });
}

export interface DrainChange {
  node_id: string;
  /** When it was drained (a repeated drain keeps the first time); null once resumed. */
  drained_at: number | null;
  /** False when it was already as asked. */
  changed: boolean;
}

/**
 * Drains (`drain` true) or resumes the user's node. Undefined when the user has no such node in their fleet: another
 * user's node, like one removed or never enrolled, is never found nor said to exist.
 */
export async function setDrained(
  deps: { store: Store; audit: AuditLog; events: RunEvents },
  asked: { userId: string; nodeId: string; drain: boolean; now: number; client: ClientSeen; by: 'user' | 'console' },
): Promise<DrainChange | undefined> {
  const { store, audit } = deps;
  const { userId, nodeId, drain, now } = asked;
  const result = await store.transaction(async () => {
    const node = await store
      .forUpdate(
        store.db
          .selectFrom('nodes')
          .select(['node_id', 'drained_at'])
          .where('node_id', '=', nodeId)
          .where('user_id', '=', userId)
          .where('removed_at', 'is', null),
      )
      .executeTakeFirst();
    if (node === undefined) return undefined;
    const was = node.drained_at === null ? null : Number(node.drained_at);
    if ((was !== null) === drain) return { node_id: nodeId, drained_at: was, changed: false };
    const drainedAt = drain ? now : null;
    await store.db.updateTable('nodes').set({ drained_at: drainedAt }).where('node_id', '=', nodeId).execute();
    await audit.record(userId, drain ? 'node_drained' : 'node_resumed', asked.client, { node_id: nodeId, by: asked.by });
    return { node_id: nodeId, drained_at: drainedAt, changed: true };
  });
  // Resumed: the runs queued meanwhile are its to take, and its poll held open now looks again at once.
  if (result?.changed === true && !drain) deps.events.queued(userId);
  return result;
}

/**
 * Why a queued run pinned to a node has not been taken, when it is that the node is drained: the node and since when
 * (GET /v1/swarm/runs/{run_id} `waiting_for_node`, the console's run page). Undefined for any other run.
 */
export async function drainedPin(
  store: Store,
  run: { status: string; pinned_node_id: string | null },
): Promise<{ node_id: string; drained_at: string } | undefined> {
  if (run.status !== 'queued' || run.pinned_node_id === null) return undefined;
  const node = await store.db.selectFrom('nodes').select('drained_at').where('node_id', '=', run.pinned_node_id).executeTakeFirst();
  if (node?.drained_at == null) return undefined;
  return { node_id: run.pinned_node_id, drained_at: isoTime(Number(node.drained_at)) };
}

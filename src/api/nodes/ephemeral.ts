// Ephemeral nodes (docs/api.md "Ephemeral nodes"), as GitHub's --ephemeral and just-in-time runners:
// enrolled to take exactly one run, then to remove themselves. The guarantee is the service's, not only the daemon's:
// the node's row records its one run in the transaction that leases it (or starts it, for the node's own run), and
// that transaction first locks the row (SQLite: BEGIN IMMEDIATE serialises it anyway; PostgreSQL: FOR UPDATE), so two
// polls racing, or a poll and an own run, never both find it empty. Once it has its run, no query that hands out,
// routes or keeps waiting a run counts it among its user's nodes.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { SvcError } from '../../contract/errors.js';
import type { Store } from '../store/store.js';

/**
 * Locks the node's row until the transaction ends and says whether it may take a run: true for any node that is not
 * ephemeral, and for an ephemeral one that has not had its run. Inside `store.transaction()`.
 */
export async function mayTakeRun(store: Store, nodeId: string): Promise<boolean> {
  const row = await store
    .forUpdate(store.db.selectFrom('nodes').select(['ephemeral', 'ephemeral_run_id']).where('node_id', '=', nodeId))
    .executeTakeFirst();
  return row === undefined || Number(row.ephemeral) !== 1 || row.ephemeral_run_id === null;
}

/** The ephemeral node's one run, in the transaction that leases or starts it (after mayTakeRun). */
export async function recordEphemeralRun(store: Store, nodeId: string, runId: string): Promise<void> {
  await store.db.updateTable('nodes').set({ ephemeral_run_id: runId }).where('node_id', '=', nodeId).where('ephemeral', '=', 1).execute();
}

/** The one run an ephemeral node has had, and whether it is over (finished, by the node or the service); none yet: undefined. */
export async function ephemeralRunOf(store: Store, nodeId: string): Promise<{ run_id: string; over: boolean } | undefined> {
  const row = await store.db
    .selectFrom('nodes as n')
    .leftJoin('runs as r', 'r.run_id', 'n.ephemeral_run_id')
    .select(['n.ephemeral_run_id', 'r.status'])
    .where('n.node_id', '=', nodeId)
    .executeTakeFirst();
  if (row?.ephemeral_run_id == null) return undefined;
  return { run_id: row.ephemeral_run_id, over: row.status !== 'queued' && row.status !== 'running' };
}

/** SQL: the node (the alias of the nodes table in the query) may still take a run: not an ephemeral one that had its run. */
export function mayStillTakeRuns(nodeAlias: string): RawBuilder<SqlBool> {
  return sql<SqlBool>`(${sql.ref(`${nodeAlias}.ephemeral`)} = 0 OR ${sql.ref(`${nodeAlias}.ephemeral_run_id`)} IS NULL)`;
}

/** 409 for an ephemeral node's own run after its one run: nothing was charged. */
export function ephemeralNodeUsed(nodeId: string): SvcError {
  return new SvcError('ephemeral_node_used', `node ${nodeId} is ephemeral and has had its one run; nothing was charged`, {
    extensions: { node_id: nodeId },
  });
}

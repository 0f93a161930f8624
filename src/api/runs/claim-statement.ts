// A poll's claim as one statement on PostgreSQL, without BEGIN and COMMIT around it (docs/api.md "Storage"): the
// runs taken, oldest first, skipping those another poll is taking (SKIP LOCKED), under the poll's lease. Their
// `started` webhook events are written in the claim's transaction (webhooks/outbox.ts) from each run's row, which
// only the claim learns: so the statement takes nothing when the user has an endpoint for them, says so, and that
// poll claims in a transaction with its events instead (dispatch.ts).
import { sql } from 'kysely';
import { eventBit } from '../../contract/webhooks.js';
import { compiledOnce, rawStatement } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import { claimableRuns, oldestFirst, type Lease, type RunRow } from './run-store.js';

/** The runs taken, or 'hooked': nothing taken, the user has endpoints for `started` events. */
export type ClaimStatement = (userId: string, nodeId: string, limit: number, lease: Lease, now: number) => Promise<RunRow[] | 'hooked'>;

interface Values {
  userId: string;
  nodeId: string;
  limit: number;
  leaseId: string;
  expiresAt: number;
  now: number;
  bit: number;
}

export function createClaimStatement(store: Store): ClaimStatement {
  const statement = compiledOnce((db, v: Values) => {
    const oldest = claimableRuns(db, v.userId, v.nodeId)
      .select('run_id')
      .where(sql<boolean>`NOT (SELECT hooked FROM hooks)`)
      .orderBy('started_at')
      .orderBy('run_id')
      .limit(sql<number>`cast(${v.limit} as integer)`)
      .forUpdate()
      .skipLocked();
    return rawStatement(
      db,
      sql<RunRow & { hooked: boolean }>`
WITH hooks AS (
  SELECT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.user_id = ${v.userId} AND (e.event_mask & cast(${v.bit} as integer)) <> 0) AS hooked
),
picked AS MATERIALIZED (${oldest}),
claimed AS (
  UPDATE runs SET status = 'running', node_id = ${v.nodeId}, lease_id = ${v.leaseId}, lease_expires_at = cast(${v.expiresAt} as bigint), claimed_at = cast(${v.now} as bigint)
  FROM picked WHERE runs.run_id = picked.run_id AND runs.status = 'queued'
  RETURNING runs.*
)
SELECT hooks.hooked, claimed.* FROM hooks LEFT JOIN claimed ON true`,
    );
  });
  return async (userId, nodeId, limit, lease, now) => {
    const { rows } = await statement(store.db, {
      userId,
      nodeId,
      limit,
      leaseId: lease.lease_id,
      expiresAt: lease.expires_at,
      now,
      bit: eventBit('started'),
    });
    if (rows[0]?.hooked === true) return 'hooked';
    // Nothing taken: the one row of `hooks`, with no run beside it.
    if (rows[0]?.run_id == null) return [];
    return oldestFirst(rows.map(({ hooked: _, ...run }) => run));
  };
}

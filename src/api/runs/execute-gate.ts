// What the execute transaction reads before it writes, in one statement (docs/api.md "Storage"): the request's
// Idempotency-Key, whether a node can take the run, the agent's current version, whether the user has caps and
// whether they take `queued` webhook events. The long way (start-run.ts) then reads again only what this says it
// must: the reasons of a 409, the caps to lock (PostgreSQL, where the caps are locked after the debit), a key's run.
// Written once for both engines (plain SQL both take).
import { sql } from 'kysely';
import { eventBit } from '../../contract/webhooks.js';
import { EVERY_AGENT } from '../budgets/budget-store.js';
import { mayStillTakeRuns } from '../nodes/ephemeral.js';
import { compiledOnce, rawStatement } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { KeyRow } from './idempotency.js';

export interface ExecuteGate {
  /** The key's row; undefined: none. */
  key: KeyRow | undefined;
  /**
   * A node serves the agent, may still take runs, is the pinned one if named, and is online (or may come back, when
   * the run may wait). Not asked (false) of a run that names labels: those are checked the long way.
   */
  nodeAvailable: boolean;
  /** The user's current version of the agent (null: the built-in agent). */
  currentDigest: string | null;
  /** The user has caps on every agent or on this one. */
  capped: boolean;
  /** The user has endpoints that take `queued` events. */
  hooked: boolean;
}

export type ReadExecuteGate = (asked: {
  userId: string;
  agentId: string;
  key: string;
  pinned: string | null;
  mayWait: boolean;
  onlineSince: number;
}) => Promise<ExecuteGate>;

export function createExecuteGate(store: Store): ReadExecuteGate {
  const statement = compiledOnce(
    (db, v: { userId: string; agentId: string; key: string; pinned: string | null; mayWait: number; onlineSince: number; bit: number }) =>
      rawStatement(
        db,
        sql<KeyRow & { node_available: unknown; current_digest: string | null; capped: unknown; hooked: unknown }>`
SELECT k.request_hash, k.state, k.status_code, k.response_json, k.run_id, k.created_at,
  EXISTS (
    SELECT 1 FROM nodes n JOIN node_agents a ON a.node_id = n.node_id
    WHERE n.user_id = ${v.userId} AND a.agent_id = ${v.agentId} AND n.removed_at IS NULL AND ${mayStillTakeRuns('n')}
      AND (cast(${v.mayWait} as integer) = 1 OR (n.last_seen_at >= cast(${v.onlineSince} as bigint) AND n.offline_at IS NULL AND n.drained_at IS NULL))
      AND (cast(${v.pinned} as text) IS NULL OR n.node_id = cast(${v.pinned} as text))
  ) AS node_available,
  (SELECT c.digest FROM agent_current c WHERE c.user_id = ${v.userId} AND c.agent_id = ${v.agentId}) AS current_digest,
  EXISTS (SELECT 1 FROM budgets b WHERE b.user_id = ${v.userId} AND b.scope IN (${EVERY_AGENT}, ${v.agentId})) AS capped,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.user_id = ${v.userId} AND (e.event_mask & cast(${v.bit} as integer)) <> 0) AS hooked
FROM (SELECT 1 AS one) AS asked
LEFT JOIN idempotency_keys k ON k.user_id = ${v.userId} AND k.idempotency_key = ${v.key}`,
      ),
  );
  return async ({ userId, agentId, key, pinned, mayWait, onlineSince }) => {
    const [row] = (
      await statement(store.db, { userId, agentId, key, pinned, mayWait: mayWait ? 1 : 0, onlineSince, bit: eventBit('queued') })
    ).rows;
    // SQLite answers EXISTS as 0 or 1, PostgreSQL as a boolean.
    const truth = (value: unknown): boolean => value === true || Number(value) === 1;
    return {
      key: row!.request_hash === null ? undefined : row!,
      nodeAvailable: truth(row!.node_available),
      currentDigest: row!.current_digest,
      capped: truth(row!.capped),
      hooked: truth(row!.hooked),
    };
  };
}

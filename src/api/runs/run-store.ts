// The runs table (docs/api.md "Runs on the node"): every statement on it. A run is inserted charged, in the
// transaction that debits its price: `queued` for any node of its user that serves the agent, or `running` at once
// under a lease when a node starts a run of its own. A node claims queued runs by polling and holds each under a
// lease; the run is finished once, guarded by its status (and lease), by the node's result or by the service.
import { randomBytes } from 'node:crypto';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export type RunState = 'queued' | 'running' | 'succeeded' | 'failed';

export interface RunRow {
  run_id: string;
  user_id: string;
  agent_id: string;
  status: RunState;
  /** The price debited when the run was accepted; 0 once refunded. */
  charged_cents: number;
  input_json: string | null;
  output_json: string | null;
  /** The uploaded bundle the run executes (pinned at execute); null: the node's built-in agent. */
  bundle_digest: string | null;
  pinned_node_id: string | null;
  node_id: string | null;
  lease_id: string | null;
  lease_expires_at: number | null;
  finished_by: 'node' | 'service' | null;
  started_at: number;
  claimed_at: number | null;
  finished_at: number | null;
}

export interface NewRun {
  run_id: string;
  user_id: string;
  agent_id: string;
  charged_cents: number;
  input_json: string | null;
  pinned_node_id: string | null;
  bundle_digest: string | null;
  started_at: number;
}

export interface Lease {
  lease_id: string;
  expires_at: number;
}

export interface RunStore {
  insertQueued(run: NewRun): void;
  /** A node's own run: running at once, leased to it. */
  insertLeased(run: NewRun, nodeId: string, lease: Lease): void;
  get(runId: string): RunRow | undefined;
  /** Oldest first, the queued runs of `userId` that `nodeId` may take: its agents, unpinned or pinned to it. */
  claimable(userId: string, nodeId: string, limit: number): RunRow[];
  /** Takes a queued run for the node; false when another node took it first. */
  claim(runId: string, nodeId: string, lease: Lease, now: number): boolean;
  /** Extends the leases of the runs the node still holds; returns the ids of those it does not hold any more. */
  renewLeases(nodeId: string, runIds: readonly string[], expiresAt: number): string[];
  /** Finishes a queued or running run (only those: a run is finished once); false when it was finished already. */
  finish(runId: string, status: 'succeeded' | 'failed', chargedCents: number, outputJson: string, by: 'node' | 'service', now: number): boolean;
  /** Running runs whose lease ran out (or that never had one: a run cut short before leases existed). */
  expiredLeases(now: number): RunRow[];
  /** Queued runs that waited since before `queuedBefore`, or that no online node of their user can take. */
  stranded(queuedBefore: number, onlineSince: number): RunRow[];
  /** Runs each node finished since `since` (the fleet view's runs_today): not those the service failed for it (node_lost). */
  finishedSince(nodeIds: readonly string[], since: number): Map<string, number>;
}

export function newLease(now: number, leaseMs: number): Lease {
  return { lease_id: randomBytes(16).toString('hex'), expires_at: now + leaseMs };
}

export function createRunStore(db: SqliteDatabase): RunStore {
  const insert = db.prepare(`
    INSERT INTO runs (run_id, user_id, agent_id, status, charged_cents, input_json, pinned_node_id, bundle_digest, node_id, lease_id, lease_expires_at, started_at, claimed_at)
    VALUES (@run_id, @user_id, @agent_id, @status, @charged_cents, @input_json, @pinned_node_id, @bundle_digest, @node_id, @lease_id, @lease_expires_at, @started_at, @claimed_at)`);
  const select = db.prepare<[string], RunRow>('SELECT * FROM runs WHERE run_id = ?');
  const selectClaimable = db.prepare<[string, string, string, number], RunRow>(`
    SELECT * FROM runs
    WHERE status = 'queued' AND user_id = ? AND (pinned_node_id IS NULL OR pinned_node_id = ?)
      AND agent_id IN (SELECT agent_id FROM node_agents WHERE node_id = ?)
    ORDER BY started_at, run_id LIMIT ?`);
  const claimOne = db.prepare(`
    UPDATE runs SET status = 'running', node_id = ?, lease_id = ?, lease_expires_at = ?, claimed_at = ?
    WHERE run_id = ? AND status = 'queued'`);
  const renewOne = db.prepare(`UPDATE runs SET lease_expires_at = ? WHERE run_id = ? AND node_id = ? AND status = 'running'`);
  const finishOne = db.prepare(`
    UPDATE runs SET status = ?, charged_cents = ?, output_json = ?, finished_by = ?, finished_at = ?, lease_expires_at = NULL
    WHERE run_id = ? AND status IN ('queued', 'running')`);
  const selectExpired = db.prepare<[number], RunRow>(`
    SELECT * FROM runs WHERE status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at <= ?) ORDER BY started_at`);
  // A queued run is stranded when it waited too long, or when none of its user's nodes that could take it (serving
  // its agent, and the pinned one if any) has been seen since `onlineSince`.
  const selectStranded = db.prepare<[number, number], RunRow>(`
    SELECT * FROM runs r WHERE r.status = 'queued' AND (r.started_at < ? OR NOT EXISTS (
      SELECT 1 FROM nodes n JOIN node_agents a ON a.node_id = n.node_id
      WHERE n.user_id = r.user_id AND a.agent_id = r.agent_id AND n.last_seen_at >= ?
        AND (r.pinned_node_id IS NULL OR n.node_id = r.pinned_node_id)))
    ORDER BY r.started_at`);
  const countFinishedSince = db.prepare<[string, number], { n: number }>(
    `SELECT count(*) AS n FROM runs WHERE node_id = ? AND finished_at >= ? AND status IN ('succeeded', 'failed') AND finished_by = 'node'`,
  );

  return {
    insertQueued(run) {
      insert.run({ ...run, status: 'queued', node_id: null, lease_id: null, lease_expires_at: null, claimed_at: null });
    },
    insertLeased(run, nodeId, lease) {
      insert.run({ ...run, status: 'running', node_id: nodeId, lease_id: lease.lease_id, lease_expires_at: lease.expires_at, claimed_at: run.started_at });
    },
    get: (runId) => select.get(runId),
    claimable: (userId, nodeId, limit) => selectClaimable.all(userId, nodeId, nodeId, limit),
    claim: (runId, nodeId, lease, now) => claimOne.run(nodeId, lease.lease_id, lease.expires_at, now, runId).changes === 1,
    renewLeases(nodeId, runIds, expiresAt) {
      return runIds.filter((runId) => renewOne.run(expiresAt, runId, nodeId).changes !== 1);
    },
    finish: (runId, status, chargedCents, outputJson, by, now) => finishOne.run(status, chargedCents, outputJson, by, now, runId).changes === 1,
    expiredLeases: (now) => selectExpired.all(now),
    stranded: (queuedBefore, onlineSince) => selectStranded.all(queuedBefore, onlineSince),
    finishedSince(nodeIds, since) {
      return new Map(nodeIds.map((nodeId) => [nodeId, countFinishedSince.get(nodeId, since)?.n ?? 0]));
    },
  };
}

// The runs table (docs/api.md "Runs on the node"): every statement on it. A run is inserted charged, in the
// transaction that debits its price: `queued` for any node of its user that serves the agent, or `running` at once
// under a lease when a node starts a run of its own. A node claims queued runs by polling and holds each under a
// lease; the run is finished once, guarded by its status (and lease), by the node's result or by the service.
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { mayStillTakeRuns } from '../nodes/ephemeral.js';
import { carriesRunLabels } from '../nodes/labels.js';
import { takesNewRuns } from '../nodes/node-drain.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';

export type RunState = Tables['runs']['status'];

/** A run as stored (store/tables.ts, the one description of its columns). */
export type RunRow = Tables['runs'];

export interface NewRun {
  run_id: string;
  user_id: string;
  agent_id: string;
  charged_cents: number;
  input_json: string | null;
  pinned_node_id: string | null;
  bundle_digest: string | null;
  started_at: number;
  timeout_seconds: number;
  queue_seconds: number;
  queue_deadline_at: number;
  /** 1: the run may run again from the start when its node is lost (its version's agent.json retry_safe). */
  retry_safe: number;
  /** What started it (contract/run-trigger.ts): shown, never used for money or authorization. */
  trigger: RunRow['trigger'];
}

export interface Lease {
  lease_id: string;
  expires_at: number;
}

export interface RunStore {
  /** Returns the row as written. */
  insertQueued(run: NewRun): Promise<RunRow>;
  /** A node's own run: running at once, leased to it. Returns the row as written. */
  insertLeased(run: NewRun, nodeId: string, lease: Lease): Promise<RunRow>;
  get(runId: string): Promise<RunRow | undefined>;
  /** The run, locked until the transaction ends (PostgreSQL); whoever finishes a run reads it this way. */
  getForUpdate(runId: string): Promise<RunRow | undefined>;
  /** Whether a queued run of `userId` waits that `nodeId` may take (claim's condition), without taking it. */
  hasClaimable(userId: string, nodeId: string): Promise<boolean>;
  /**
   * Takes for the node, oldest first, up to `limit` queued runs of `userId` it may take: its agents, unpinned or
   * pinned to it, requiring no label it does not carry. One statement, so one round trip on PostgreSQL, where the
   * runs another instance's poll is taking are skipped (SKIP LOCKED) rather than waited for. The runs share `lease`.
   */
  claim(userId: string, nodeId: string, limit: number, lease: Lease, now: number): Promise<RunRow[]>;
  /**
   * Extends the leases of the runs the node still holds. `lost`: those it does not hold any more; `cancel`: those
   * it holds whose user asked to cancel them (the node stops them and reports them cancelled).
   */
  renewLeases(nodeId: string, runIds: readonly string[], expiresAt: number): Promise<{ lost: string[]; cancel: string[] }>;
  /** Of the runs the node lists, those it holds whose cancel was asked for (a held poll looks at each wake-up). */
  cancelAsked(nodeId: string, runIds: readonly string[]): Promise<string[]>;
  /**
   * Finishes a queued or running run (only those: a run is finished once); false when it was finished already.
   * `cancelledAt`: it ended cancelled (stored failed, shown cancelled).
   */
  finish(
    runId: string,
    status: 'succeeded' | 'failed',
    chargedCents: number,
    outputJson: string,
    by: 'node' | 'service',
    now: number,
    cancelledAt?: number,
  ): Promise<boolean>;
  /**
   * Puts a running run back in the queue as its next attempt (its node lost it), waiting until `queueDeadline`; its
   * lease is gone, so the node that held it is refused. False when it is not running any more.
   */
  requeue(runId: string, queueDeadline: number): Promise<boolean>;
  /** Records the ask to cancel a queued or running run once; false when it had ended or was asked before. */
  requestCancel(runId: string, now: number): Promise<boolean>;
  /** Running runs whose cancel was asked for before `askedBefore`, which their node has not reported since. */
  cancelsOverdue(askedBefore: number): Promise<RunRow[]>;
  /** Running runs whose lease ran out (or that never had one: a run cut short before leases existed). */
  expiredLeases(now: number): Promise<RunRow[]>;
  /**
   * Queued runs past their queue deadline (runs queued before deadlines existed: since before `legacyQueuedBefore`),
   * or that no node of their user could ever take: none left that serves the agent, carries its labels and is the
   * pinned one if named, online or not.
   */
  stranded(now: number, legacyQueuedBefore: number): Promise<RunRow[]>;
  /** Runs each node finished since `since` (the fleet view's runs_today): not those the service failed for it (node_lost). */
  finishedSince(nodeIds: readonly string[], since: number): Promise<Map<string, number>>;
}

// Literals, not parameters: SQLite uses a partial index (runs_queued, runs_leased: WHERE status = '…') only when the
// query's own condition is the same literal; with a bound parameter it scans every run of the user. The look for work
// limits itself to a literal 1 too: with a bare parameter as its LIMIT, SQLite prepares the statement again at each
// run (40 µs, not 7; see the claim).
const QUEUED = sql.lit('queued' as const);
const RUNNING = sql.lit('running' as const);

/** The queued runs of `userId` that `nodeId` may take, in no order. */
export const claimableRuns = (db: Kysely<Tables>, userId: string, nodeId: string) =>
  db
    .selectFrom('runs')
    .where('status', '=', QUEUED)
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('pinned_node_id', 'is', null), eb('pinned_node_id', '=', nodeId)]))
    .where('agent_id', 'in', (eb) => eb.selectFrom('node_agents').select('agent_id').where('node_id', '=', nodeId))
    .where(carriesRunLabels(sql.ref('runs.run_id'), nodeId))
    // A drained node takes no new run (docs/api.md "Draining a node"), read here so both engines' claims skip it.
    .where(takesNewRuns(nodeId));

/** RETURNING comes in no promised order; the node is handed its runs oldest first. */
export function oldestFirst(rows: RunRow[]): RunRow[] {
  return rows.sort((a, b) => a.started_at - b.started_at || (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0));
}

export function newLease(now: number, leaseMs: number): Lease {
  return { lease_id: randomBytes(16).toString('hex'), expires_at: now + leaseMs };
}

type Held = Pick<RunRow, 'status' | 'node_id' | 'lease_id' | 'lease_expires_at' | 'claimed_at'>;

const QUEUED_HELD: Held = { status: 'queued', node_id: null, lease_id: null, lease_expires_at: null, claimed_at: null };

/** The row a new run is written as, with what it holds (queued: nothing yet). */
export function rowOf(run: NewRun, held: Held = QUEUED_HELD): RunRow {
  return {
    ...run,
    ...held,
    output_json: null,
    finished_by: null,
    finished_at: null,
    attempt: 1,
    cancel_requested_at: null,
    cancelled_at: null,
  };
}

/** The row of a new run queued for its user's nodes. */
export const rowOfQueued = (run: NewRun): RunRow => rowOf(run);
type Claim = { userId: string; nodeId: string; limit: number; leaseId: string; expiresAt: number; now: number };

export function createRunStore(store: Store): RunStore {
  // The statements every run makes (an execute, the claim that hands it out and the result that finishes it) are
  // compiled once (compiled-once.ts); the others are built at each call.
  const insertRun = compiledOnce((db, row: NewRun & Held) =>
    db.insertInto('runs').values({
      run_id: row.run_id,
      user_id: row.user_id,
      agent_id: row.agent_id,
      charged_cents: row.charged_cents,
      input_json: row.input_json,
      pinned_node_id: row.pinned_node_id,
      bundle_digest: row.bundle_digest,
      started_at: row.started_at,
      status: row.status,
      node_id: row.node_id,
      lease_id: row.lease_id,
      lease_expires_at: row.lease_expires_at,
      claimed_at: row.claimed_at,
      timeout_seconds: row.timeout_seconds,
      queue_seconds: row.queue_seconds,
      queue_deadline_at: row.queue_deadline_at,
      retry_safe: row.retry_safe,
      trigger: row.trigger,
      attempt: 1,
    }),
  );
  const insert = async (run: NewRun, held: Held): Promise<RunRow> => {
    await insertRun(store.db, { ...run, ...held });
    return rowOf(run, held);
  };
  const byId = (db: Kysely<Tables>, runId: string) => db.selectFrom('runs').selectAll().where('run_id', '=', runId);
  const get = compiledOnce((db, at: { runId: string }) => byId(db, at.runId));
  const getForUpdate = compiledOnce((db, at: { runId: string }) => store.forUpdate(byId(db, at.runId)));
  const eligible = claimableRuns;
  // Without the order: the first that qualifies answers, where sorting them all first cost more than the look.
  const anyClaimable = compiledOnce((db, at: { userId: string; nodeId: string }) =>
    eligible(db, at.userId, at.nodeId).select(sql.lit(1).as('one')).limit(sql.lit(1)),
  );
  // The runs to take, oldest first, are picked once, in a materialised CTE: PostgreSQL may run a subquery of
  // `run_id IN (…)` again for each row it updates, and so take more than `limit` runs (and one run more than an
  // ephemeral node's one), where a CTE is evaluated once.
  const claimRuns = compiledOnce((db, claim: Claim) => {
    // The limit is an expression, not a bare parameter: SQLite plans with the value of a LIMIT that is a bare
    // parameter, and so prepares the statement again each time it is bound, which made this pick 137 µs, not 37.
    const oldest = eligible(db, claim.userId, claim.nodeId)
      .select('run_id')
      .orderBy('started_at')
      .orderBy('run_id')
      .limit(sql<number>`cast(${claim.limit} as integer)`);
    return db
      .with(
        (cte) => cte('picked').materialized(),
        () => (store.engine === 'postgres' ? oldest.forUpdate().skipLocked() : oldest),
      )
      .updateTable('runs')
      .from('picked')
      .set({ status: 'running', node_id: claim.nodeId, lease_id: claim.leaseId, lease_expires_at: claim.expiresAt, claimed_at: claim.now })
      .whereRef('runs.run_id', '=', 'picked.run_id')
      .where('runs.status', '=', QUEUED)
      .returningAll();
  });
  const finishRun = compiledOnce(
    (
      db,
      end: {
        runId: string;
        status: 'succeeded' | 'failed';
        chargedCents: number;
        outputJson: string;
        by: 'node' | 'service';
        now: number;
        cancelledAt: number | null;
      },
    ) =>
      db
        .updateTable('runs')
        .set({
          status: end.status,
          charged_cents: end.chargedCents,
          output_json: end.outputJson,
          finished_by: end.by,
          finished_at: end.now,
          lease_expires_at: null,
          cancelled_at: end.cancelledAt,
        })
        .where('run_id', '=', end.runId)
        .where('status', 'in', ['queued', 'running']),
  );

  return {
    insertQueued: (run) => insert(run, QUEUED_HELD),
    insertLeased: (run, nodeId, lease) =>
      insert(run, {
        status: 'running',
        node_id: nodeId,
        lease_id: lease.lease_id,
        lease_expires_at: lease.expires_at,
        claimed_at: run.started_at,
      }),
    get: async (runId) => (await get(store.db, { runId })).rows[0],
    getForUpdate: async (runId) => (await getForUpdate(store.db, { runId })).rows[0],
    hasClaimable: async (userId, nodeId) => (await anyClaimable(store.db, { userId, nodeId })).rows.length > 0,
    async claim(userId, nodeId, limit, lease, now) {
      const { rows } = await claimRuns(store.db, { userId, nodeId, limit, leaseId: lease.lease_id, expiresAt: lease.expires_at, now });
      return oldestFirst(rows);
    },
    async renewLeases(nodeId, runIds, expiresAt) {
      if (runIds.length === 0) return { lost: [], cancel: [] };
      const renewed = await store.db
        .updateTable('runs')
        .set({ lease_expires_at: expiresAt })
        .where('run_id', 'in', [...runIds])
        .where('node_id', '=', nodeId)
        .where('status', '=', 'running')
        .returning(['run_id', 'cancel_requested_at'])
        .execute();
      const held = new Set(renewed.map((row) => row.run_id));
      return {
        lost: runIds.filter((runId) => !held.has(runId)),
        cancel: renewed.filter((row) => row.cancel_requested_at !== null).map((row) => row.run_id),
      };
    },
    async cancelAsked(nodeId, runIds) {
      if (runIds.length === 0) return [];
      const rows = await store.db
        .selectFrom('runs')
        .select('run_id')
        .where('run_id', 'in', [...runIds])
        .where('node_id', '=', nodeId)
        .where('status', '=', RUNNING)
        .where('cancel_requested_at', 'is not', null)
        .execute();
      return rows.map((row) => row.run_id);
    },
    finish: async (runId, status, chargedCents, outputJson, by, now, cancelledAt) =>
      (await finishRun(store.db, { runId, status, chargedCents, outputJson, by, now, cancelledAt: cancelledAt ?? null }))
        .numAffectedRows === 1n,
    async requeue(runId, queueDeadline) {
      const moved = await store.db
        .updateTable('runs')
        .set((eb) => ({
          status: 'queued',
          node_id: null,
          lease_id: null,
          lease_expires_at: null,
          claimed_at: null,
          queue_deadline_at: queueDeadline,
          attempt: eb('attempt', '+', 1),
        }))
        .where('run_id', '=', runId)
        .where('status', '=', 'running')
        .executeTakeFirst();
      return moved.numUpdatedRows === 1n;
    },
    async requestCancel(runId, now) {
      const asked = await store.db
        .updateTable('runs')
        .set({ cancel_requested_at: now })
        .where('run_id', '=', runId)
        .where('status', 'in', ['queued', 'running'])
        .where('cancel_requested_at', 'is', null)
        .executeTakeFirst();
      return asked.numUpdatedRows === 1n;
    },
    cancelsOverdue: (askedBefore) =>
      store.db
        .selectFrom('runs')
        .selectAll()
        .where('status', '=', RUNNING)
        .where('cancel_requested_at', '<=', askedBefore)
        .orderBy('started_at')
        .execute(),
    expiredLeases: (now) =>
      store.db
        .selectFrom('runs')
        .selectAll()
        .where('status', '=', RUNNING)
        .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<=', now)]))
        .orderBy('started_at')
        .execute(),
    stranded: (now, legacyQueuedBefore) =>
      store.db
        .selectFrom('runs as r')
        .selectAll('r')
        .where('r.status', '=', QUEUED)
        .where((eb) =>
          eb.or([
            eb('r.queue_deadline_at', '<=', now),
            eb.and([eb('r.queue_deadline_at', 'is', null), eb('r.started_at', '<', legacyQueuedBefore)]),
            eb.not(
              eb.exists(
                eb
                  .selectFrom('nodes as n')
                  .innerJoin('node_agents as a', 'a.node_id', 'n.node_id')
                  .select(eb.lit(1).as('one'))
                  .whereRef('n.user_id', '=', 'r.user_id')
                  .whereRef('a.agent_id', '=', 'r.agent_id')
                  .where('n.removed_at', 'is', null)
                  .where(mayStillTakeRuns('n'))
                  .where(carriesRunLabels(sql.ref('r.run_id'), sql.ref('n.node_id')))
                  .where((inner) =>
                    inner.or([inner('r.pinned_node_id', 'is', null), inner('n.node_id', '=', inner.ref('r.pinned_node_id'))]),
                  ),
              ),
            ),
          ]),
        )
        .orderBy('r.started_at')
        .execute(),
    async finishedSince(nodeIds, since) {
      if (nodeIds.length === 0) return new Map();
      const rows = await store.db
        .selectFrom('runs')
        .select(['node_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('node_id', 'in', [...nodeIds])
        .where('finished_at', '>=', since)
        .where('status', 'in', ['succeeded', 'failed'])
        .where('finished_by', '=', 'node')
        .groupBy('node_id')
        .execute();
      const counts = new Map(rows.map((row) => [row.node_id!, Number(row.n)]));
      return new Map(nodeIds.map((nodeId) => [nodeId, counts.get(nodeId) ?? 0]));
    },
  };
}

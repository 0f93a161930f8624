// The node's side of a run (docs/api.md "Runs on the node"), the way GitHub's and GitLab's runners pull jobs: the node
// long-polls; the poll is its heartbeat, renews the leases of the runs it still works on, and hands it queued runs of
// its user that it serves, under a lease (one per poll). The node reports each result once, with the lease; a
// result for a run it no longer holds is refused (409 lease_lost), so a lost node's run is refunded and never
// charged again by a late result.
import { SvcError } from '../../contract/errors.js';
import type { AssignedRun, PollRequest, PollResponse, ResultRequest } from '../../contract/node-protocol.js';
import type { RunResponse } from '../../contract/schemas.js';
import { isoTime } from '../../lib/clock.js';
import { linkedSignal } from '../../lib/linked-signal.js';
import type { ServiceContext } from '../context.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import { ephemeralRunOf, mayTakeRun, recordEphemeralRun } from '../nodes/ephemeral.js';
import type { NodeRegistry, NodeSaid } from '../nodes/registry.js';
import type { FailedRunOutput, FinishRun, RunOutcome } from './finish-run.js';
import type { SecretsOfRun } from '../user-secrets/run-secrets.js';
import { createRunEventOutbox } from '../webhooks/outbox.js';
import type { RunEvents, Wake } from './run-events.js';
import { createClaimStatement } from './claim-statement.js';
import type { HeldRuns } from './held-runs.js';
import { createQueueLooks } from './queue-looks.js';
import { newLease, type RunRow, type RunStore } from './run-store.js';
import { isFinished, leaseSecondsFrom, runView } from './run-view.js';

export interface Dispatch {
  /**
   * Resolves when runs were assigned, or when the hold is over (or the service starts draining) with none.
   * `gone`: the node's connection closed mid-poll (killed, cut off); the hold ends, and the node is not seen.
   */
  poll(node: EnrolledNode, request: PollRequest, drain: AbortSignal, gone?: AbortSignal): Promise<PollResponse>;
  report(node: EnrolledNode, runId: string, result: ResultRequest): Promise<RunResponse>;
}

const MAX_MESSAGE_CHARS = 2000;
/**
 * A node's last_seen_at is written at most this often, and at most ten times a lease (unless what it says of its
 * host changed): a node is online when seen within a lease (45 s by default) and the fleet view shows seconds, while
 * a busy node polls many times a second, each poll writing twice (at its start and the end of its hold).
 */
const SEEN_EVERY_MS = 1_000;

export function createDispatch(
  ctx: ServiceContext,
  deps: { runs: RunStore; nodes: NodeRegistry; finish: FinishRun; events: RunEvents; secretsOf: SecretsOfRun; held: HeldRuns | undefined },
): Dispatch {
  const { runs, nodes, finish, events, held } = deps;
  const outbox = createRunEventOutbox(ctx.store, ctx.clock);
  const oneStatement = ctx.store.engine === 'postgres' ? createClaimStatement(ctx.store) : undefined;
  const { leaseMs, pollHoldMs } = ctx.runTiming;
  const seenEveryMs = Math.min(SEEN_EVERY_MS, leaseMs / 10);

  /** `receivedAt`: when the poll came in, on the monotonic clock (leaseSecondsFrom). */
  const assignedOf = (run: RunRow, receivedAt: number): AssignedRun => ({
    run_id: run.run_id,
    agent_id: run.agent_id,
    user_id: run.user_id,
    input: run.input_json === null ? {} : (JSON.parse(run.input_json) as unknown),
    lease_id: run.lease_id!,
    lease_expires_at: isoTime(run.lease_expires_at!),
    lease_seconds: leaseSecondsFrom(run.lease_expires_at!, ctx.clock.now(), receivedAt),
    ...(run.bundle_digest === null ? {} : { bundle_digest: run.bundle_digest }),
    ...(run.timeout_seconds === null ? {} : { timeout_seconds: run.timeout_seconds }),
    attempt: run.attempt,
  });
  /** The runs as the node is handed them, each with the secrets its agent declares (docs/api.md "Secrets"). */
  const handOut = (claimed: RunRow[], receivedAt: number): Promise<AssignedRun[]> =>
    Promise.all(
      claimed.map(async (run) => {
        const secrets = await deps.secretsOf(run);
        return { ...assignedOf(run, receivedAt), ...(secrets === undefined ? {} : { secrets }) };
      }),
    );
  /** Their `started` events, in the transaction that claimed them (webhooks/outbox.ts). */
  const started = async (claimed: RunRow[]): Promise<RunRow[]> => {
    for (const run of claimed) await outbox.record(run);
    return claimed;
  };
  const looks = createQueueLooks(events, ctx.clock);
  /** The runs taken, remembered for their results where the finish reads them (held-runs.ts: PostgreSQL). */
  const taken = (claimed: RunRow[]): RunRow[] => {
    held?.remember(claimed);
    return claimed;
  };
  // The runs one poll takes share its lease: a result is accepted for the run with the lease it was handed under.
  const claim = async (node: EnrolledNode, capacity: number, receivedAt: number): Promise<AssignedRun[]> => {
    const now = ctx.clock.now();
    const lease = newLease(now, leaseMs);
    if (!node.ephemeral) {
      // PostgreSQL: one statement, unless the user takes `started` events (claim-statement.ts).
      const claimed = oneStatement === undefined ? 'hooked' : await oneStatement(node.user_id, node.node_id, capacity, lease, now);
      if (claimed !== 'hooked') return handOut(taken(claimed), receivedAt);
      return handOut(
        taken(await ctx.store.transaction(async () => started(await runs.claim(node.user_id, node.node_id, capacity, lease, now)))),
        receivedAt,
      );
    }
    return handOut(
      await ctx.store.transaction(async () => {
        // An ephemeral node's row is locked first: a racing poll of the same node waits here, then finds its run taken.
        if (!(await mayTakeRun(ctx.store, node.node_id))) return [];
        const [run] = await runs.claim(node.user_id, node.node_id, 1, lease, now);
        if (run === undefined) return [];
        await recordEphemeralRun(ctx.store, node.node_id, run.run_id);
        return started([run]);
      }),
      receivedAt,
    );
  };

  return {
    async poll(node, request, drain, gone) {
      const receivedAt = performance.now();
      const now = ctx.clock.now();
      /**
       * Writes last_seen_at (and what the poll says of the host) when something changed or it has aged. What was
       * written is kept on the node as its credential is remembered (nodes/credentials.ts), before the write, so the
       * node's other polls meanwhile do not write it again: a node writes it once a second, however many polls it holds.
       */
      const seen = async (at: number, said: NodeSaid = {}): Promise<void> => {
        const changed =
          (said.hostname !== undefined && said.hostname !== node.seen.hostname) ||
          (said.name !== undefined && said.name !== node.seen.name) ||
          (said.version !== undefined && said.version !== node.seen.version) ||
          // Its first health is written at once (its user sees it at the next look), then as the heartbeat ages.
          (said.health !== undefined && node.seen.healthAt === undefined);
        if (!changed && at - (node.seen.at ?? Number.NEGATIVE_INFINITY) < seenEveryMs) return;
        node.seen = {
          at,
          hostname: said.hostname ?? node.seen.hostname,
          name: said.name ?? node.seen.name,
          version: said.version ?? node.seen.version,
          ...(said.health !== undefined ? { healthAt: at } : node.seen.healthAt === undefined ? {} : { healthAt: node.seen.healthAt }),
        };
        await nodes.touch(node.node_id, said, at);
      };
      await seen(now, {
        hostname: request.hostname,
        ...(request.name === undefined ? {} : { name: request.name }),
        version: request.version,
        ...(request.health === undefined ? {} : { health: request.health }),
      });
      const { lost, cancel } = await runs.renewLeases(node.node_id, request.running, now + leaseMs);
      const cancelOf = (ids: readonly string[]) => (ids.length === 0 ? {} : { cancel: [...ids] });
      const holdMs = Math.min(pollHoldMs, (request.wait_seconds ?? Number.POSITIVE_INFINITY) * 1000);
      // Linked, not AbortSignal.any: the drain lives as long as the process and would keep an entry per poll (linked-signal.ts).
      const linked = gone === undefined ? undefined : linkedSignal([drain, gone]);
      const hold = linked?.signal ?? drain;
      // Every poll handed no run says whether its node is drained, whichever way it ends: the daemon's status follows it.
      const drainedFlag = async () => ((await nodes.drainedAt(node.node_id)) !== null ? { drained: true as const } : {});
      try {
        const oneRun = node.ephemeral ? await ephemeralRunOf(ctx.store, node.node_id) : undefined;
        if (oneRun !== undefined) {
          // An ephemeral node that had its run takes no other: the poll waits for that run to end, then tells the
          // node to retire (remove itself, DELETE /v1/swarm/nodes/self), at once rather than at its next poll.
          const over = await events.waitFor(
            { run: oneRun.run_id },
            async () => ((await ephemeralRunOf(ctx.store, node.node_id))?.over === true ? true : undefined),
            holdMs,
            hold,
          );
          if (gone?.aborted !== true) await seen(ctx.clock.now());
          return {
            runs: [],
            lost,
            lease_seconds: Math.floor(leaseMs / 1000),
            ...cancelOf(cancel),
            ...(over === true ? { retire: true } : {}),
            ...(await drainedFlag()),
          };
        }
        if (cancel.length > 0)
          return { runs: [], lost, lease_seconds: Math.floor(leaseMs / 1000), ...cancelOf(cancel), ...(await drainedFlag()) };
        // A held poll ends early when a run it holds is to be cancelled: the node stops it within a wake-up, not a hold.
        const check = async (wake: Wake): Promise<{ runs: AssignedRun[]; cancel: string[] } | undefined> => {
          const asked = await runs.cancelAsked(node.node_id, request.running);
          if (asked.length > 0) return { runs: [], cancel: asked };
          if (request.capacity === 0) return undefined;
          const { look, queued } = looks.shouldLook(node.user_id, node.node_id, wake);
          if (!look) return undefined;
          // SQLite: a look at once or at a recheck, outside the group commit, keeps a poll that would find nothing from
          // queueing for the write lock; a poll woken for a run queued just now claims at once. PostgreSQL's claim is
          // one statement that waits for no lock (SKIP LOCKED), and a look would be one round trip more.
          if (ctx.store.engine === 'sqlite' && wake.reason !== 'event' && !(await runs.hasClaimable(node.user_id, node.node_id))) {
            looks.drained(node.node_id, queued);
            return undefined;
          }
          const assigned = await claim(node, request.capacity, receivedAt);
          if (assigned.length < request.capacity) looks.drained(node.node_id, queued);
          return assigned.length > 0 ? { runs: assigned, cancel: [] } : undefined;
        };
        // A node gone mid-poll takes no run: one claimed for it would wait a whole lease for nobody. A poll with room
        // for runs is one its node's queued runs may wake; every poll wakes for a cancel (run-events.ts).
        const topics =
          request.capacity > 0 ? [{ user: node.user_id }, { work: node.user_id, node: node.node_id }] : [{ user: node.user_id }];
        const found = (await events.waitFor(topics, check, holdMs, hold)) ?? { runs: [], cancel: [] };
        // Seen at the end of the hold too: a node in a 20 s poll is online the whole time. Not one that went away
        // meanwhile: it would show online for a hold more after it died.
        if (gone?.aborted !== true) await seen(ctx.clock.now());
        // A poll handed runs was not drained when it took them; one handed none says whether it is (for its status).
        return {
          runs: found.runs,
          lost,
          lease_seconds: Math.floor(leaseMs / 1000),
          ...cancelOf(found.cancel),
          ...(found.runs.length === 0 ? await drainedFlag() : {}),
        };
      } finally {
        linked?.release();
      }
    },

    async report(node, runId, result) {
      // Finished first, read only when it was not: the node's run is one it holds, so of its user. Another user's run
      // is not held by it either, and is then told apart from its own below.
      const finished = await finish(runId, outcomeOf(result), { kind: 'holder', node_id: node.node_id, lease_id: result.lease_id });
      if (finished.kind === 'finished') {
        // The waiting execute is handed the answer as it was stored: it reads nothing back.
        events.finished(runId, finished.json);
        return JSON.parse(finished.json) as RunResponse;
      }
      if (finished.kind === 'requeued') {
        // Interrupted by this node's restart, and safe to run again: back in the queue, for this node or another.
        events.queued(node.user_id);
        return runView(finished.run, await ctx.ledger.balance(node.user_id));
      }
      const now = await runs.get(runId);
      if (now === undefined || now.user_id !== node.user_id) throw new SvcError('run_not_found', `no run ${runId} of this node's user`);
      // The same node's same result again (its acknowledgement was lost): the run as it ended, no second effect.
      if (isFinished(now) && now.finished_by === 'node' && now.node_id === node.node_id && now.lease_id === result.lease_id) {
        return runView(now, await ctx.ledger.balance(now.user_id));
      }
      throw new SvcError(
        'lease_lost',
        `this node does not hold run ${runId}${isFinished(now) ? `: it ended ${now.status} (${failureOf(now.output_json)})` : ''}`,
        {
          extensions: { run_id: runId, run_status: now.status },
        },
      );
    },
  };
}

/** A node's result as the run's outcome: a failure always reads {error, message}, bounded. */
function outcomeOf(result: ResultRequest): RunOutcome {
  if (result.status === 'succeeded') return { status: 'succeeded', output: result.output ?? null };
  const given = (typeof result.output === 'object' && result.output !== null ? result.output : {}) as Partial<
    Record<keyof FailedRunOutput, unknown>
  >;
  const error = typeof given.error === 'string' && /^[a-z_]{1,32}$/.test(given.error) ? given.error : 'exit';
  const message = typeof given.message === 'string' ? given.message.slice(0, MAX_MESSAGE_CHARS) : 'the agent failed on the node';
  return { status: 'failed', output: { error, message } };
}

function failureOf(outputJson: string | null): string {
  try {
    const output = JSON.parse(outputJson ?? 'null') as { error?: unknown };
    return typeof output?.error === 'string' ? output.error : 'finished';
  } catch {
    return 'finished';
  }
}

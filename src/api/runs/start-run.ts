// POST /v1/swarm/execute (spec §4, docs/decisions/0008-execute-debits-atomically.md, docs/api.md
// "Runs on the node"). One transaction takes the Idempotency-Key, checks that a node can run the agent, debits the
// price (`balance >= price` in the same UPDATE) and records the run: queued for the user's nodes, or, when a node
// starts a run of its own, running at once under that node's lease. No node for it: 409 no_node_available, and
// nothing of the request stays (no charge, no run, no key), as for 402. On PostgreSQL a user's run that will be
// accepted (the common case) is first tried as one statement (execute-statement.ts), which declines, writing
// nothing, whenever the transaction has more to say.
import { walletLoginUrl } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/email.js';
import { normalizeLabels } from '../../contract/labels.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import type { ExecuteRequest } from '../../contract/schemas.js';
import type { RunTrigger } from '../../contract/run-trigger.js';
import { createAgentPrices } from '../agents/agent-prices.js';
import { createAgentVersions } from '../agents/agent-versions.js';
import { createInputChecks, VersionChangedMeanwhile, type InputVerdict } from '../agents/input-checks.js';
import type { ServiceContext } from '../context.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import { createExecuteSlots } from '../store/execute-slots.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import { ephemeralNodeUsed, mayTakeRun, recordEphemeralRun } from '../nodes/ephemeral.js';
import { nodeDrainedError } from '../nodes/node-drain.js';
import { assertLabelsAvailable, assertOwnLabels, recordRunLabels } from '../nodes/labels.js';
import type { NodeRegistry } from '../nodes/registry.js';
import type { IdempotencyStore } from './idempotency.js';
import { judgeKey, requestHash } from './idempotency.js';
import { newLease, rowOfQueued, type Lease, type NewRun, type RunRow, type RunStore } from './run-store.js';
import { createBudgetCheck } from '../budgets/budget-check.js';
import { createBudgetStore } from '../budgets/budget-store.js';
import { createRunEventOutbox, payloadOf } from '../webhooks/outbox.js';
import { createExecuteGate } from './execute-gate.js';
import { createExecuteStatement } from './execute-statement.js';

export type Caller = { kind: 'user'; sub: string } | { kind: 'node'; node: EnrolledNode };

export interface ExecuteCall {
  caller: Caller;
  request: ExecuteRequest;
  idempotencyKey: string;
  /** What started it (run-trigger.ts): recorded on the run, never part of the key's request. */
  trigger: RunTrigger;
}

export type Started =
  /** The key's first, final answer. */
  | { kind: 'replay'; statusCode: number; json: string }
  /** The key's run, still queued or running. */
  | { kind: 'in_flight'; run: RunRow }
  /** A new run; `lease` when the calling node runs it itself. */
  | { kind: 'started'; run: RunRow; lease?: Lease };

export type StartRun = (call: ExecuteCall) => Promise<Started>;

/** The key was claimed by a request that took no lock (execute's one statement) after this one looked: look again. */
class KeyTakenMeanwhile extends Error {}

/** Checks of the input against the version current at the time, when that version keeps moving meanwhile. */
const MAX_CHECK_ATTEMPTS = 3;

export function createRunStarter(ctx: ServiceContext, runs: RunStore, keys: IdempotencyStore, nodes: NodeRegistry): StartRun {
  const versions = createAgentVersions(ctx.store);
  const inputChecks = createInputChecks(versions, ctx.clock);
  // The price lookup: a SKU's price of spec §2, or the operator's price for an agent of the user's own.
  const prices = createAgentPrices(ctx.store, versions, ctx.uploadLimits.ownAgentPriceCents);
  const slots = createExecuteSlots(ctx.store);
  const budgets = createBudgetStore(ctx.store, ctx.clock);
  const withinBudget = createBudgetCheck(budgets);
  const outbox = createRunEventOutbox(ctx.store, ctx.clock);
  const oneStatement = ctx.store.engine === 'postgres' ? createExecuteStatement(ctx.store) : undefined;
  const readGate = createExecuteGate(ctx.store);
  /** What both ways make of the request: the run's pinned node, its labels, the key's hash, how long it may wait. */
  const termsOf = (call: ExecuteCall, userId: string, agentId: string) => {
    const { request } = call;
    const pinned = call.caller.kind === 'node' ? call.caller.node.node_id : request.node_id;
    const labels = normalizeLabels(request.labels ?? []);
    // No labels hashes as before labels existed, so a key stored by an older version still replays.
    const hash = requestHash({
      user_id: userId,
      agent_id: agentId,
      input: request.input ?? null,
      node_id: pinned ?? null,
      labels: labels.length > 0 ? labels : undefined,
    });
    const queueSeconds = request.queue_seconds ?? Math.round(ctx.runTiming.queueTimeoutMs / 1000);
    return { request, pinned, labels, hash, queueSeconds };
  };
  const newRunOf = (
    call: ExecuteCall,
    userId: string,
    agentId: string,
    priceCents: number,
    checked: InputVerdict,
    bundleDigest: string | null,
    now: number,
  ): NewRun => {
    const { request, pinned, queueSeconds } = termsOf(call, userId, agentId);
    return {
      run_id: timeOrderedId(now),
      user_id: userId,
      agent_id: agentId,
      charged_cents: priceCents,
      input_json: request.input === undefined ? null : JSON.stringify(request.input),
      pinned_node_id: pinned ?? null,
      bundle_digest: bundleDigest,
      started_at: now,
      // The agent's own limit; execute may ask for less, never more (docs/api.md "Runs as jobs").
      timeout_seconds: Math.min(checked.terms.timeout_seconds, request.timeout_seconds ?? Number.POSITIVE_INFINITY),
      queue_seconds: queueSeconds,
      queue_deadline_at: now + queueSeconds * 1000,
      retry_safe: checked.terms.retry_safe ? 1 : 0,
      trigger: call.trigger,
    };
  };
  /** The run queued in one statement (PostgreSQL), or undefined: the transaction decides. */
  const startInOneStatement = async (
    call: ExecuteCall,
    userId: string,
    agentId: string,
    priceCents: number,
    checked: InputVerdict,
  ): Promise<Started | undefined> => {
    if (oneStatement === undefined || call.caller.kind !== 'user' || checked.problems.length > 0) return undefined;
    const now = ctx.clock.now();
    const { labels, hash, queueSeconds } = termsOf(call, userId, agentId);
    const fresh = newRunOf(call, userId, agentId, priceCents, checked, checked.digest, now);
    const run = rowOfQueued(fresh);
    const eventId = timeOrderedId(now);
    const started = await oneStatement({
      run: fresh,
      labels,
      key: call.idempotencyKey,
      requestHash: hash,
      mayWait: queueSeconds > 0,
      onlineSince: now - ctx.runTiming.leaseMs,
      event: { id: eventId, payload: JSON.stringify(payloadOf(run, 'queued', eventId, now)) },
    });
    return started === undefined ? undefined : { kind: 'started', run };
  };
  const start = (
    call: ExecuteCall,
    userId: string,
    agentId: string,
    priceCents: number,
    agentName: string,
    checked: InputVerdict,
  ): Promise<Started> =>
    ctx.store.transaction(async () => {
      // Two instances given the same key at once (PostgreSQL): the second waits here for the first's commit, then
      // finds its key and replays it, never starting a second run.
      await ctx.store.lock(`idempotency:${userId}:${call.idempotencyKey}`);
      const now = ctx.clock.now();
      const { request, labels, hash, queueSeconds } = termsOf(call, userId, agentId);
      const ownNode = call.caller.kind === 'node' ? call.caller.node : undefined;
      // What this transaction must know before it writes, in one read (execute-gate.ts).
      const gate = await readGate({
        userId,
        agentId,
        key: call.idempotencyKey,
        pinned: request.node_id ?? null,
        mayWait: queueSeconds > 0,
        onlineSince: now - ctx.runTiming.leaseMs,
      });
      const lookup = judgeKey(gate.key, hash, now);
      if (lookup.kind === 'replay') return lookup;
      if (lookup.kind === 'in_flight') {
        const run = await runs.get(lookup.run_id);
        if (run !== undefined) return { kind: 'in_flight', run };
      }
      // A node's own run goes to itself: it asked, so it is there, and must carry the labels it names. Any other needs
      // a node serving the agent and carrying its labels: online, or, when the run may wait, one that may come back.
      if (ownNode !== undefined) {
        // Drained, it takes no new run, its own included (docs/api.md "Draining a node").
        const drainedAt = await nodes.drainedAt(ownNode.node_id);
        if (drainedAt !== null) throw nodeDrainedError(ownNode.node_id, drainedAt);
        await assertOwnLabels(nodes, ownNode.node_id, agentId, labels);
      } else if (!gate.nodeAvailable || labels.length > 0)
        await assertNodeAvailable(ctx, nodes, { userId, agentId, pinned: request.node_id, labels, queueSeconds }, now);
      // An ephemeral node's own run is its one run too; its row stays locked until this run is recorded on it.
      const ephemeralNode = ownNode?.ephemeral === true ? ownNode.node_id : undefined;
      if (ephemeralNode !== undefined && !(await mayTakeRun(ctx.store, ephemeralNode))) throw ephemeralNodeUsed(ephemeralNode);
      // PostgreSQL locks the caps after the debit, and a cap may be set meanwhile: it always looks (budget-store.ts).
      const capped = gate.capped || ctx.store.engine === 'postgres';

      const runId = timeOrderedId(now);
      const debit = await ctx.ledger.debitForRun({ user_id: userId, run_id: runId, amount_cents: priceCents });
      // The user's caps, after the debit took the wallet's row (the lock order, budgets/budget-store.ts), before
      // anything else is said: over one, 402 budget_exceeded, and nothing of this request stays.
      if (capped) await withinBudget(userId, agentId, priceCents, now);
      if (!debit.ok) {
        // Thrown inside the transaction, so nothing of this request stays: no charge, no run, no key. A retry with the
        // same key after funding runs the agent (spec §7: fund the wallet, then retry execute).
        throw new SvcError(
          'insufficient_balance',
          `the wallet holds ${formatDollars(debit.balance_cents)}; one run of ${agentName} costs ${formatDollars(priceCents)}`,
          {
            extensions: {
              wallet_login_url: walletLoginUrl(ctx.urls.walletUrl),
              balance_cents: debit.balance_cents,
              price_cents: priceCents,
            },
          },
        );
      }
      // After the balance, so a spec-shaped request ({user_id, agent_id}, spec §7) from a wallet too low gets its 402
      // whatever the agent; before anything stays: an input the agent's schema refused (checked before this
      // transaction) rolls it back, the debit with it.
      const bundleDigest = inputChecks.pinTo(checked, userId, gate.currentDigest);
      if (capped) await budgets.charge(userId, agentId, priceCents, now);
      const newRun = { ...newRunOf(call, userId, agentId, priceCents, checked, bundleDigest, now), run_id: runId };
      const lease = call.caller.kind === 'node' ? newLease(now, ctx.runTiming.leaseMs) : undefined;
      const run =
        lease === undefined || call.caller.kind !== 'node'
          ? await runs.insertQueued(newRun)
          : await runs.insertLeased(newRun, call.caller.node.node_id, lease);
      await recordRunLabels(ctx.store, runId, labels);
      if (ephemeralNode !== undefined) await recordEphemeralRun(ctx.store, ephemeralNode, runId);
      if (gate.hooked || ownNode !== undefined) await outbox.record(run);
      if (!(await keys.begin(userId, call.idempotencyKey, hash, runId, now))) throw new KeyTakenMeanwhile();
      return { kind: 'started', run, ...(lease === undefined ? {} : { lease }) };
    });

  return async (call) => {
    const owner = call.caller.kind === 'node' ? call.caller.node.user_id : call.caller.sub;
    const userId = normalizeEmail(call.request.user_id);
    if (userId !== normalizeEmail(owner)) {
      throw new SvcError(
        'forbidden',
        `user_id is not the user of the ${call.caller.kind === 'node' ? 'node credential' : 'access token'}`,
        {
          remedy: 'Send the user_id of the signed-in user (the checkout e-mail the token was issued to).',
        },
      );
    }
    // A node credential runs on its own node only (docs/api.md "Scopes"): a taken-over node cannot send work elsewhere.
    if (
      call.caller.kind === 'node' &&
      call.request.node_id !== undefined &&
      call.request.node_id.toLowerCase() !== call.caller.node.node_id
    ) {
      throw new SvcError('forbidden', 'a node credential starts runs on its own node only; node_id names another', {
        remedy: "Leave node_id out (the run executes on this node), or start it with the user's access token.",
      });
    }
    const sku = await prices.agentFor(userId, call.request.agent_id);
    for (let attempt = 1; ; attempt += 1) {
      try {
        // Checked before the transaction, which then pins the version checked (input-checks.ts).
        const checked = await inputChecks.verdict(userId, sku.agent_id, call.request.input);
        // Never all of the pool's connections at once: a node's polls and results keep theirs (execute-slots.ts).
        return await slots(
          async () =>
            (await startInOneStatement(call, userId, sku.agent_id, sku.price_cents, checked)) ??
            start(call, userId, sku.agent_id, sku.price_cents, sku.name, checked),
        );
      } catch (error) {
        // The key taken by a request that took no lock: this one finds it now, and replays it.
        if (error instanceof KeyTakenMeanwhile) continue;
        if (!(error instanceof VersionChangedMeanwhile)) throw error;
        // The user's own uploads or rollbacks racing this run, again and again: nothing was charged, ask for a retry.
        if (attempt === MAX_CHECK_ATTEMPTS) {
          throw new SvcError(
            'service_unavailable',
            `the current version of ${sku.agent_id} kept changing while this run's input was checked; nothing was charged`,
            {
              retryAfterSeconds: 1,
              remedy: 'Retry with the same Idempotency-Key once your uploads and rollbacks of this agent are done.',
            },
          );
        }
      }
    }
  };
}

/**
 * 409 when no node of the user could take the run, saying why: none serves the agent (the pinned node, if one is
 * named) and carries its labels. A run that may wait (queue_seconds > 0) waits for such a node that is offline now
 * (docs/api.md "The queue"); one that may not (queue_seconds 0) needs one online.
 */
async function assertNodeAvailable(
  ctx: ServiceContext,
  nodes: NodeRegistry,
  wanted: { userId: string; agentId: string; pinned: string | undefined; labels: readonly string[]; queueSeconds: number },
  now: number,
): Promise<void> {
  const { userId, agentId, pinned, labels } = wanted;
  const onlineSince = now - ctx.runTiming.leaseMs;
  if ((await nodes.servingOnline(userId, agentId, onlineSince, pinned, labels)).length > 0) return;
  const mayWait = wanted.queueSeconds > 0;
  if (mayWait && (await nodes.serving(userId, agentId, pinned, labels)).length > 0) return;
  if (labels.length > 0)
    await assertLabelsAvailable(nodes, { userId, agentId, onlineSince: mayWait ? undefined : onlineSince, pinned }, labels);
  const fleet = await nodes.nodesOf(userId);
  const agentsOf = new Map(await Promise.all(fleet.map(async (node) => [node.node_id, await nodes.agentsOf(node.node_id)] as const)));
  const named = pinned === undefined ? undefined : fleet.find((node) => node.node_id === pinned);
  const serving = fleet.filter((node) => agentsOf.get(node.node_id)!.includes(agentId));
  const why =
    pinned !== undefined
      ? named === undefined
        ? `you have no node ${pinned}`
        : !(agentsOf.get(pinned) ?? []).includes(agentId)
          ? `node ${pinned} does not serve ${agentId}`
          : named.ephemeral_run_id !== null
            ? `node ${pinned} is ephemeral and has had its one run`
            : named.drained_at !== null
              ? `node ${pinned} is drained (swarm-node nodes resume ${pinned}), and queue_seconds 0 asked not to wait for it`
              : `node ${pinned} is offline, and queue_seconds 0 asked not to wait for it`
      : fleet.length === 0
        ? 'you have no node: runs execute on a node you install'
        : serving.length === 0
          ? `none of your nodes serves ${agentId}`
          : serving.every((node) => node.ephemeral_run_id !== null)
            ? `your nodes that serve ${agentId} are ephemeral and have had their one run`
            : `your nodes that serve ${agentId} are offline, and queue_seconds 0 asked not to wait for one`;
  throw new SvcError('no_node_available', `no node can run ${agentId} now: ${why}; nothing was charged`, {
    extensions: {
      agent_id: agentId,
      ...(pinned === undefined ? {} : { node_id: pinned }),
      ...(labels.length === 0 ? {} : { labels: [...labels] }),
    },
  });
}

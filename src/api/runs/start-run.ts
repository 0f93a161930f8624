// POST /v1/swarm/execute (spec §4, DECISIONS.md "Execute", docs/api.md "Runs on the node"). One transaction takes
// the Idempotency-Key, checks that a node can run the agent, debits the price (`balance >= price` in the same
// UPDATE) and records the run: queued for the user's nodes, or, when a node starts a run of its own, running at once
// under that node's lease. No node for it: 409 no_node_available, and nothing of the request stays (no charge, no
// run, no key), as for 402.
import { walletLoginUrl } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/email.js';
import { normalizeLabels } from '../../contract/labels.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import type { ExecuteRequest } from '../../contract/schemas.js';
import { createAgentPrices } from '../agents/agent-prices.js';
import { createAgentVersions } from '../agents/agent-versions.js';
import { createInputChecks, VersionChangedMeanwhile, type InputVerdict } from '../agents/input-checks.js';
import type { ServiceContext } from '../context.js';
import { timeOrderedId } from '../../lib/time-ordered-id.js';
import { createTurns } from '../store/turns.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import { ephemeralNodeUsed, mayTakeRun, recordEphemeralRun } from '../nodes/ephemeral.js';
import { assertLabelsAvailable, assertOwnLabels, recordRunLabels } from '../nodes/labels.js';
import type { NodeRegistry } from '../nodes/registry.js';
import type { IdempotencyStore } from './idempotency.js';
import { requestHash } from './idempotency.js';
import { newLease, type Lease, type RunRow, type RunStore } from './run-store.js';
import { createBudgetCheck } from '../budgets/budget-check.js';
import { createBudgetStore } from '../budgets/budget-store.js';
import { createRunEventOutbox } from '../webhooks/outbox.js';

export type Caller = { kind: 'user'; sub: string } | { kind: 'node'; node: EnrolledNode };

export interface ExecuteCall {
  caller: Caller;
  request: ExecuteRequest;
  idempotencyKey: string;
}

export type Started =
  /** The key's first, final answer. */
  | { kind: 'replay'; statusCode: number; json: string }
  /** The key's run, still queued or running. */
  | { kind: 'in_flight'; run: RunRow }
  /** A new run; `lease` when the calling node runs it itself. */
  | { kind: 'started'; run: RunRow; lease?: Lease };

export type StartRun = (call: ExecuteCall) => Promise<Started>;

/** Checks of the input against the version current at the time, when that version keeps moving meanwhile. */
const MAX_CHECK_ATTEMPTS = 3;

export function createRunStarter(ctx: ServiceContext, runs: RunStore, keys: IdempotencyStore, nodes: NodeRegistry): StartRun {
  const versions = createAgentVersions(ctx.store);
  const inputChecks = createInputChecks(versions, ctx.clock);
  // The price lookup: a SKU's spec price, or the operator's price for an agent of the user's own.
  const prices = createAgentPrices(ctx.store, versions, ctx.uploadLimits.ownAgentPriceCents);
  const turns = createTurns(ctx.store.engine);
  const withinBudget = createBudgetCheck(ctx.store, createBudgetStore(ctx.store, ctx.clock));
  const outbox = createRunEventOutbox(ctx.store, ctx.clock);
  const start = (call: ExecuteCall, userId: string, agentId: string, priceCents: number, agentName: string, checked: InputVerdict): Promise<Started> =>
    ctx.store.transaction(async () => {
      // Two instances given the same key at once (PostgreSQL): the second waits here for the first's commit, then
      // finds its key and replays it, never starting a second run.
      await ctx.store.lock(`idempotency:${userId}:${call.idempotencyKey}`);
      const now = ctx.clock.now();
      const { request } = call;
      const pinned = call.caller.kind === 'node' ? call.caller.node.node_id : request.node_id;
      const labels = normalizeLabels(request.labels ?? []);
      // No labels hashes as before labels existed, so a key stored by an older version still replays.
      const hash = requestHash({ user_id: userId, agent_id: agentId, input: request.input ?? null, node_id: pinned ?? null, labels: labels.length > 0 ? labels : undefined });
      const lookup = await keys.lookup(userId, call.idempotencyKey, hash, now);
      if (lookup.kind === 'replay') return lookup;
      if (lookup.kind === 'in_flight') {
        const run = await runs.get(lookup.run_id);
        if (run !== undefined) return { kind: 'in_flight', run };
      }
      // A node's own run goes to itself: it asked, so it is there, and must carry the labels it names. Any other needs
      // a node serving the agent and carrying its labels: online, or, when the run may wait, one that may come back.
      const queueSeconds = request.queue_seconds ?? Math.round(ctx.runTiming.queueTimeoutMs / 1000);
      if (call.caller.kind !== 'node') await assertNodeAvailable(ctx, nodes, { userId, agentId, pinned: request.node_id, labels, queueSeconds }, now);
      else await assertOwnLabels(nodes, call.caller.node.node_id, agentId, labels);
      // An ephemeral node's own run is its one run too; its row stays locked until this run is recorded on it.
      const ephemeralNode = call.caller.kind === 'node' && call.caller.node.ephemeral ? call.caller.node.node_id : undefined;
      if (ephemeralNode !== undefined && !(await mayTakeRun(ctx.store, ephemeralNode))) throw ephemeralNodeUsed(ephemeralNode);

      const runId = timeOrderedId(now);
      // The user's caps, before the debit: over one, 402 budget_exceeded, and nothing of this request stays.
      await withinBudget(userId, agentId, priceCents, now);
      const debit = await ctx.ledger.debitForRun({ user_id: userId, run_id: runId, amount_cents: priceCents });
      if (!debit.ok) {
        // Thrown inside the transaction, so nothing of this request stays: no charge, no run, no key. A retry with the
        // same key after funding runs the agent (spec §7: fund the wallet, then retry execute).
        throw new SvcError(
          'insufficient_balance',
          `the wallet holds ${formatDollars(debit.balance_cents)}; one run of ${agentName} costs ${formatDollars(priceCents)}`,
          { extensions: { wallet_login_url: walletLoginUrl(ctx.urls.walletUrl), balance_cents: debit.balance_cents, price_cents: priceCents } },
        );
      }
      // After the balance, so a spec-shaped request ({user_id, agent_id}, spec §7) from a wallet too low gets its 402
      // whatever the agent; before anything stays: an input the agent's schema refused (checked before this
      // transaction) rolls it back, the debit with it.
      const bundleDigest = await inputChecks.pin(checked, userId);
      const newRun = {
        run_id: runId,
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
      };
      const lease = call.caller.kind === 'node' ? newLease(now, ctx.runTiming.leaseMs) : undefined;
      const run = lease === undefined || call.caller.kind !== 'node' ? await runs.insertQueued(newRun) : await runs.insertLeased(newRun, call.caller.node.node_id, lease);
      await recordRunLabels(ctx.store, runId, labels);
      if (ephemeralNode !== undefined) await recordEphemeralRun(ctx.store, ephemeralNode, runId);
      await outbox.record(run);
      await keys.begin(userId, call.idempotencyKey, hash, runId, now);
      return { kind: 'started', run, ...(lease === undefined ? {} : { lease }) };
    });

  return async (call) => {
    const owner = call.caller.kind === 'node' ? call.caller.node.user_id : call.caller.sub;
    const userId = normalizeEmail(call.request.user_id);
    if (userId !== normalizeEmail(owner)) {
      throw new SvcError('forbidden', `user_id is not the user of the ${call.caller.kind === 'node' ? 'node credential' : 'access token'}`, {
        remedy: 'Send the user_id of the signed-in user (the checkout e-mail the token was issued to).',
      });
    }
    // A node credential runs on its own node only (docs/api.md "Scopes"): a taken-over node cannot send work elsewhere.
    if (call.caller.kind === 'node' && call.request.node_id !== undefined && call.request.node_id.toLowerCase() !== call.caller.node.node_id) {
      throw new SvcError('forbidden', "a node credential starts runs on its own node only; node_id names another", {
        remedy: "Leave node_id out (the run executes on this node), or start it with the user's access token.",
      });
    }
    const sku = await prices.agentFor(userId, call.request.agent_id);
    for (let attempt = 1; ; attempt += 1) {
      try {
        // Checked before the transaction, which then pins the version checked (input-checks.ts).
        const checked = await inputChecks.verdict(userId, sku.agent_id, call.request.input);
        // One user's executes take turns in this instance: they debit one wallet, so they are serialised anyway (turns.ts).
        return await turns(userId, () => start(call, userId, sku.agent_id, sku.price_cents, sku.name, checked));
      } catch (error) {
        if (!(error instanceof VersionChangedMeanwhile)) throw error;
        // The user's own uploads or rollbacks racing this run, again and again: nothing was charged, ask for a retry.
        if (attempt === MAX_CHECK_ATTEMPTS) {
          throw new SvcError('service_unavailable', `the current version of ${sku.agent_id} kept changing while this run's input was checked; nothing was charged`, {
            retryAfterSeconds: 1,
            remedy: 'Retry with the same Idempotency-Key once your uploads and rollbacks of this agent are done.',
          });
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
  if (labels.length > 0) await assertLabelsAvailable(nodes, { userId, agentId, onlineSince: mayWait ? undefined : onlineSince, pinned }, labels);
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
            : `node ${pinned} is offline, and queue_seconds 0 asked not to wait for it`
      : fleet.length === 0
        ? 'you have no node: runs execute on a node you install'
        : serving.length === 0
          ? `none of your nodes serves ${agentId}`
          : serving.every((node) => node.ephemeral_run_id !== null)
            ? `your nodes that serve ${agentId} are ephemeral and have had their one run`
            : `your nodes that serve ${agentId} are offline, and queue_seconds 0 asked not to wait for one`;
  throw new SvcError('no_node_available', `no node can run ${agentId} now: ${why}; nothing was charged`, {
    extensions: { agent_id: agentId, ...(pinned === undefined ? {} : { node_id: pinned }), ...(labels.length === 0 ? {} : { labels: [...labels] }) },
  });
}

// POST /v1/swarm/execute (spec §4, DECISIONS.md "Execute"). Two short transactions around the agent's work:
//   1. key check, debit (`balance >= price` in the same UPDATE), run row `running`, key `in_progress`;
//   2. run finished (refunded when it failed) and the response stored on the key.
// The agent runs between them, outside any transaction, so a slow agent never holds the database.
// Everything here is prepared once per service; a request costs two transactions and no other work.
import { randomUUID } from 'node:crypto';
import { findAgentSku } from '../../contract/agents.js';
import { walletLoginUrl } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { normalizeEmail, type ExecuteRequest } from '../../contract/schemas.js';
import type { ServiceContext } from '../context.js';
import { createIdempotencyStore, requestHash, type IdempotencyStore } from './idempotency.js';
import { AgentRunError } from '../runtime/agent-run-error.js';
import { createRunFinisher, failed, succeeded, type RunOutcome } from './finish-run.js';
import { createRunStore, type RunningRun } from './run-store.js';

export interface ExecuteCall {
  /** The `sub` of the caller's verified access token. */
  subject: string;
  request: ExecuteRequest;
  idempotencyKey: string;
}

export interface ExecuteReply {
  statusCode: number;
  /** The response body, exactly as first sent and as every replay sends it. */
  json: string;
  replayed: boolean;
}

/** Where failures of the agent are logged for the operator (the stderr tail never reaches the user). */
export interface RunLog {
  warn(details: Record<string, unknown>, message: string): void;
}

export type ExecuteAgent = (call: ExecuteCall, log: RunLog) => Promise<ExecuteReply>;

type Begun = { kind: 'replay'; statusCode: number; json: string } | { kind: 'started'; run: RunningRun };

export function createExecuteAgent(ctx: ServiceContext): ExecuteAgent {
  const runs = createRunStore(ctx.db);
  const keys = createIdempotencyStore(ctx.db);
  const finishRun = createRunFinisher(ctx, runs, keys);
  const beginRun = createRunStarter(ctx, keys, (run) => runs.insertRunning(run));
  const runAgent = createAgentCaller(ctx);

  return async (call, log) => {
    const userId = normalizeEmail(call.request.user_id);
    if (userId !== normalizeEmail(call.subject)) {
      throw new SvcError('forbidden', 'user_id is not the user of the access token', {
        remedy: 'Send the user_id of the signed-in user (the checkout e-mail the token was issued to).',
      });
    }
    const sku = findAgentSku(call.request.agent_id);
    if (sku === undefined) throw new SvcError('agent_not_found', `no agent ${JSON.stringify(call.request.agent_id)}`);

    const hash = requestHash({ user_id: userId, agent_id: sku.agent_id });
    const begun = beginRun(userId, call.idempotencyKey, hash, sku.agent_id, sku.price_cents, sku.name);
    if (begun.kind === 'replay') return { statusCode: begun.statusCode, json: begun.json, replayed: true };

    const { run } = begun;
    const outcome = await runAgent(run, log);
    const json = finishRun(run, outcome, { user_id: userId, idempotency_key: call.idempotencyKey });
    return { statusCode: 200, json, replayed: false };
  };
}

function createRunStarter(
  ctx: ServiceContext,
  keys: IdempotencyStore,
  insertRunning: (run: RunningRun) => void,
): (userId: string, key: string, hash: string, agentId: string, priceCents: number, agentName: string) => Begun {
  return ctx.db.transaction((userId: string, key: string, hash: string, agentId: string, priceCents: number, agentName: string): Begun => {
    const now = ctx.clock.now();
    const lookup = keys.lookup(userId, key, hash, now);
    if (lookup.kind === 'replay') return lookup;

    const run: RunningRun = { run_id: randomUUID(), user_id: userId, agent_id: agentId, charged_cents: priceCents, started_at: now };
    const debit = ctx.ledger.debitForRun({ user_id: userId, run_id: run.run_id, amount_cents: priceCents });
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
    insertRunning(run);
    keys.begin(userId, key, hash, run.run_id, now);
    return { kind: 'started', run };
  }).immediate;
}

/**
 * Runs the agent with a signal of its own per run. One listener on the service's shutdown signal aborts them all,
 * rather than one listener per run on that shared signal (which warns past ten concurrent runs).
 */
function createAgentCaller(ctx: ServiceContext): (run: RunningRun, log: RunLog) => Promise<RunOutcome> {
  const inFlight = new Set<AbortController>();
  ctx.shutdownSignal.addEventListener(
    'abort',
    () => {
      for (const controller of inFlight) controller.abort(ctx.shutdownSignal.reason);
    },
    { once: true },
  );

  return async (run, log) => {
    const controller = new AbortController();
    if (ctx.shutdownSignal.aborted) controller.abort(ctx.shutdownSignal.reason);
    inFlight.add(controller);
    try {
      const output = await ctx.runtime.run({ run_id: run.run_id, agent_id: run.agent_id, user_id: run.user_id }, controller.signal);
      const outputJson = serializeOutput(output);
      if (outputJson === undefined) return failed('bad_output', 'the agent answered with something that is not JSON');
      return succeeded(output ?? null, outputJson);
    } catch (error) {
      if (error instanceof AgentRunError) {
        log.warn({ run_id: run.run_id, agent_id: run.agent_id, reason: error.reason, agent_stderr: error.detail }, `agent run failed: ${error.message}`);
        return failed(error.reason, error.message);
      }
      log.warn({ run_id: run.run_id, agent_id: run.agent_id, err: error }, 'agent runtime failed');
      return failed('internal', 'the agent runtime failed');
    } finally {
      inFlight.delete(controller);
    }
  };
}

function serializeOutput(output: unknown): string | undefined {
  try {
    return JSON.stringify(output ?? null) as string | undefined;
  } catch {
    return undefined;
  }
}

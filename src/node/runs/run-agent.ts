// `run` (spec §4 execute, docs/decisions/0008-execute-debits-atomically.md): every run is journaled with its
// Idempotency-Key BEFORE the call, so an answer lost to the network leaves a `pending` row that a later run (or the
// daemon) settles by asking the service for the key's run (docs/api.md "Settling a pending run"), never by sending
// it again: a run is charged at most once, and one that never reached the service never runs later unasked. A
// request that provably never left (no connection could be made) is journaled `failed` with error_code not_sent at
// once.
// A run ends in an outcome, not an exception: its caller decides what it means (the CLI and the wizard make an
// error of it, run-errors.ts; the daemon pauses, holds or logs).
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_LIFETIME_SECONDS } from '../../contract/claims.js';
import type { CatalogAgent } from '../../contract/own-agents.js';
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { isFinishedStatus, type FinishedRunStatus } from '../../contract/run-status.js';
import type { RunResponse } from '../../contract/schemas.js';
import { monotonicClock, type Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { agentToRun } from '../service/catalog.js';
import { withDefaultInput } from './default-input.js';
import type { ServiceClient } from '../service/service-client.js';
import { processIsAlive } from '../host/process-alive.js';
import { journalRunSettled, journalRunStarted, pendingRuns, type RunSource } from '../store/journal.js';
import { defaultInputOf } from '../store/registrations.js';
import type { Executor } from '../work/executor.js';
import { leaseSecondsOf, RunLease } from '../work/run-lease.js';
import type { KeySettlement } from '../../contract/jobs.js';
import { RunsApi } from '../service/runs-api.js';

/**
 * Who asks for the run. An enrolled node, with its credential: the run is pinned to it and runs here, through
 * `executor`, whether or not the daemon is running. A signed-in user, with the JWT: the service routes the run to one
 * of the user's online nodes, and this process follows it until it ends.
 */
export type RunCaller =
  | { kind: 'node'; bearer: string; user_id: string; node_id: string; executor: Executor }
  | { kind: 'user'; bearer: string; user_id: string };

export interface RunDeps {
  db: SqliteDatabase;
  client: ServiceClient;
  clock: Clock;
  caller: RunCaller;
  source: RunSource;
  /** This process: its own pending rows are in flight, not lost. */
  pid?: number;
  /** How long to follow a run that has not ended when execute answers (default 2 minutes). */
  followMs?: number;
  /** Stops the agent run here (the node stops); the run then ends as the service decides (a refund). */
  signal?: AbortSignal;
  /**
   * Each answer for the run while it has not ended: its id and charge, for a caller that must say what a person
   * leaves behind at Ctrl+C. Given, a user's execute answers at once (respond-async) so that the id is known while
   * the run waits, not 30 s later; the wait is then the follow's.
   */
  onRunState?: (run: RunResponse) => void;
}

export interface RunResult {
  idempotency_key: string;
  run_id: string;
  agent_id: string;
  status: FinishedRunStatus;
  charged_cents: number;
  balance_cents: number;
  output: unknown;
  started_at: string;
  finished_at: string;
  node_id: string | null;
}

/**
 * A key is kept by the service for 24 h; a replay after that could run and charge a second time, so a row this
 * old is closed as `failed` with error_code outcome_unknown instead (an hour of margin for clock skew).
 */
const REPLAY_WINDOW_MS = (IDEMPOTENCY_KEY_LIFETIME_SECONDS - 3600) * 1000;
/** A user's execute waits this long for the node's result before answering 202 (the service's own bound). */
const EXECUTE_WAIT_SECONDS = 30;
const DEFAULT_FOLLOW_MS = 120_000;

/** What execute's answer means for the journal row. */
type Settlement =
  /** The run ended: it succeeded, or failed at the agent or on its node (not charged). */
  | { kind: 'settled'; result: RunResult }
  /** Refused before a charge (a 4xx): insufficient balance, no node, a refused credential, a bad request. */
  | { kind: 'refused'; status: 'insufficient_balance' | 'failed'; error: SvcError }
  /** No answer, a server failure, or a run still going: the row stays pending and its key decides later. */
  | { kind: 'unknown'; error: SvcError }
  /** No connection could be made: the request never left this host, and never runs. */
  | { kind: 'not_sent'; error: SvcError };

/** What became of one run, with the agent it was and the key it is journaled under. */
export type RunOutcome = Settlement & { agent: CatalogAgent; idempotency_key: string };

interface JournalledRequest {
  idempotency_key: string;
  agent_id: string;
  user_id: string;
  input: Record<string, unknown> | undefined;
  /** What the node that runs it must carry (run --label); empty: any node. */
  labels: readonly string[];
  /** How long it may wait for a node, and a time limit below the agent's (run --queue-seconds, --timeout-seconds). */
  terms?: RunTermsAsked;
}

/** What a caller may ask of one run beyond its input (docs/api.md "Runs as jobs"). */
export interface RunTermsAsked {
  queue_seconds?: number;
  timeout_seconds?: number;
}

async function executeOnce(deps: RunDeps, row: JournalledRequest): Promise<Settlement> {
  const { caller } = deps;
  try {
    const body = {
      user_id: row.user_id,
      agent_id: row.agent_id,
      ...(row.input === undefined ? {} : { input: row.input }),
      ...(row.labels.length === 0 ? {} : { labels: [...row.labels] }),
      ...row.terms,
    };
    // The lease is counted from here (run-lease.ts): the request left before the service leased the run.
    const sentAt = monotonicClock.now();
    const executeWait = caller.kind === 'node' || deps.onRunState !== undefined ? 0 : EXECUTE_WAIT_SECONDS;
    // The daemon's runs are its schedule's; `run` and the wizard are a person's (docs/api.md "Triggers").
    const trigger = deps.source === 'daemon' ? 'schedule' : 'manual';
    let { run } = await deps.client.execute(caller.bearer, body, row.idempotency_key, executeWait, trigger);
    if (!isFinishedStatus(run.status)) deps.onRunState?.(run);
    if (run.lease !== undefined && caller.kind === 'node') {
      const lease = new RunLease(monotonicClock, sentAt, leaseSecondsOf(run.lease.seconds, run.lease.expires_at, deps.clock.now()));
      const executed = await caller.executor.execute(
        {
          run_id: run.run_id,
          agent_id: row.agent_id,
          user_id: row.user_id,
          input: row.input ?? {},
          lease_id: run.lease.lease_id,
          lease,
          ...(run.bundle_digest === undefined ? {} : { bundle_digest: run.bundle_digest }),
          ...(run.timeout_seconds === undefined ? {} : { timeout_seconds: run.timeout_seconds }),
          ...(run.lease.secrets === undefined ? {} : { secrets: run.lease.secrets }),
        },
        deps.signal,
        deps.signal,
      );
      if (executed.kind === 'unreported') return { kind: 'unknown', error: executed.error };
      if (executed.kind === 'reported') run = executed.run;
    }
    return settledOrUnknown(await follow(deps, run), row.idempotency_key);
  } catch (error) {
    if (!(error instanceof SvcError)) return { kind: 'unknown', error: new SvcError('failed', String((error as Error)?.message ?? error)) };
    if (error.code === 'service_unreachable' && error.extensions.not_sent === true) return { kind: 'not_sent', error };
    // Not answered, or a server failure: whether it ran is unknown; the key decides later.
    if (error.code === 'service_unreachable' || error.code === 'request_in_progress' || error.status >= 500)
      return { kind: 'unknown', error };
    // Any other 4xx refused the request before a charge (insufficient_balance, no_node_available: nothing stays).
    return { kind: 'refused', status: error.code === 'insufficient_balance' ? 'insufficient_balance' : 'failed', error };
  }
}

function settledOrUnknown(run: RunResponse, idempotencyKey: string): Settlement {
  if (!isFinishedStatus(run.status)) {
    return {
      kind: 'unknown',
      error: new SvcError('failed', `run ${run.run_id} is still ${run.status}${run.node_id === null ? '' : ` on node ${run.node_id}`}`),
    };
  }
  return {
    kind: 'settled',
    result: { ...run, status: run.status, finished_at: run.finished_at ?? run.started_at, idempotency_key: idempotencyKey },
  };
}

/** Until the run ends, or `followMs` passed: the service holds each read until it ends (at most 30 s). */
async function follow(deps: RunDeps, first: RunResponse): Promise<RunResponse> {
  let run = first;
  const deadline = Date.now() + (deps.followMs ?? DEFAULT_FOLLOW_MS);
  while (!isFinishedStatus(run.status) && Date.now() < deadline && deps.signal?.aborted !== true) {
    const waitSeconds = Math.max(1, Math.min(EXECUTE_WAIT_SECONDS, Math.ceil((deadline - Date.now()) / 1000)));
    run = await deps.client.runState(deps.caller.bearer, run.run_id, waitSeconds);
    if (!isFinishedStatus(run.status)) deps.onRunState?.(run);
  }
  return run;
}

function settle(deps: RunDeps, row: { idempotency_key: string; agent_id: string; started_at: number }, outcome: Settlement): void {
  const now = deps.clock.now();
  const key = row.idempotency_key;
  if (outcome.kind === 'settled') {
    const { result } = outcome;
    journalRunSettled(
      deps.db,
      {
        idempotency_key: key,
        // The journal knows succeeded and failed; a cancelled run is a failed one, error_code cancelled.
        status: result.status === 'succeeded' ? 'succeeded' : 'failed',
        run_id: result.run_id,
        charged_cents: result.charged_cents,
        balance_cents: result.balance_cents,
        error_code: result.status === 'cancelled' ? 'cancelled' : result.status === 'failed' ? 'agent_failed' : null,
        output: result.output,
        node_id: result.node_id,
      },
      now,
    );
  } else if (outcome.kind === 'not_sent') {
    journalRunSettled(deps.db, { idempotency_key: key, status: 'failed', error_code: 'not_sent' }, now);
  } else if (outcome.kind === 'refused') {
    const balance = outcome.error.extensions.balance_cents;
    journalRunSettled(
      deps.db,
      {
        idempotency_key: key,
        status: outcome.status,
        balance_cents: typeof balance === 'number' ? balance : null,
        error_code: outcome.error.code,
      },
      now,
    );
  }
}

export interface PendingSettlement {
  /** Results of runs executed here that a crash or an outage kept from the service, reported now. */
  reported: number;
  /**
   * Runs executed here whose lease ran out first (the node was killed or cut off): the service had failed them
   * node_lost and refunded them, so their late result was refused and nothing was charged.
   */
  lost: number;
  settled: number;
  /** Closed without an answer: older than the service keeps keys. */
  expired: number;
  /** Still pending: their writer still waits, another user's, or the service did not answer. */
  left: number;
}

/**
 * Reports what a crash left of runs executed here (a result kept, a run cut short: never run again), then asks the
 * service what became of each pending run by its key (docs/api.md "Settling a pending run"): its run as it ended,
 * or, when the service has none, the key settled as never run; never by sending the run again.
 */
export async function settlePendingRuns(deps: RunDeps): Promise<PendingSettlement> {
  const summary: PendingSettlement = { reported: 0, lost: 0, settled: 0, expired: 0, left: 0 };
  if (deps.caller.kind === 'node') {
    const executions = await deps.caller.executor.recover();
    summary.reported = executions.reported;
    summary.lost = executions.lost;
    summary.left += executions.left;
  }
  const self = deps.pid ?? process.pid;
  for (const row of pendingRuns(deps.db)) {
    if (row.owner_pid !== null && row.owner_pid !== self && processIsAlive(row.owner_pid)) {
      summary.left += 1;
      continue;
    }
    if (deps.clock.now() - row.started_at > REPLAY_WINDOW_MS) {
      journalRunSettled(
        deps.db,
        { idempotency_key: row.idempotency_key, status: 'failed', error_code: 'outcome_unknown' },
        deps.clock.now(),
      );
      summary.expired += 1;
      continue;
    }
    // Keys are per user at the service: another user's row can only be replayed by that user.
    const userId = row.user_id ?? deps.caller.user_id;
    if (normalizeEmail(userId) !== normalizeEmail(deps.caller.user_id)) {
      summary.left += 1;
      continue;
    }
    let found: KeySettlement;
    try {
      found = await new RunsApi(deps.client).settleByKey(deps.caller.bearer, row.idempotency_key);
    } catch (error) {
      summary.left += 1;
      // Unreachable now: the rest would fail the same way.
      if (error instanceof SvcError && error.code === 'service_unreachable') break;
      continue;
    }
    if (found.settled === 'never_ran') {
      // Never reached the service, and now never will: nothing ran, nothing was charged.
      journalRunSettled(deps.db, { idempotency_key: row.idempotency_key, status: 'failed', error_code: 'never_ran' }, deps.clock.now());
      summary.settled += 1;
      continue;
    }
    const outcome = settledOrUnknown(found.run as RunResponse, row.idempotency_key);
    if (outcome.kind === 'unknown') {
      // Still queued or running at the service: asked again at the next settlement.
      summary.left += 1;
      continue;
    }
    settle(deps, row, outcome);
    summary.settled += 1;
  }
  return summary;
}

/**
 * Runs an agent once, journaled, with `given` over the registration's default input (register --input), on a node
 * that carries `labels` (normalised; run --label). Throws only when it cannot start one (an unknown agent, the store
 * failing).
 */
export async function runAgent(
  deps: RunDeps,
  agentId: string,
  given?: Record<string, unknown>,
  labels: readonly string[] = [],
  terms: RunTermsAsked = {},
): Promise<RunOutcome> {
  const sku = await agentToRun(deps.client, agentId, deps.caller.bearer);
  const input = withDefaultInput(defaultInputOf(deps.db, sku.agent_id), given);
  const key = randomUUID();
  const startedAt = deps.clock.now();
  journalRunStarted(
    deps.db,
    {
      idempotency_key: key,
      agent_id: sku.agent_id,
      source: deps.source,
      price_cents: sku.price_cents,
      user_id: deps.caller.user_id,
      owner_pid: deps.pid ?? process.pid,
      input,
      labels,
    },
    startedAt,
  );
  const outcome = await executeOnce(deps, {
    idempotency_key: key,
    agent_id: sku.agent_id,
    user_id: deps.caller.user_id,
    input,
    labels,
    terms,
  });
  settle(deps, { idempotency_key: key, agent_id: sku.agent_id, started_at: startedAt }, outcome);
  return { ...outcome, agent: sku, idempotency_key: key };
}

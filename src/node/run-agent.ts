// `run` (spec §4 execute, DECISIONS.md "Execute"): every run is journaled with its Idempotency-Key BEFORE the call,
// so an answer lost to the network leaves a `pending` row that a later run (or the daemon) replays with the same
// key and body. The service answers a replay with the first response: a run is charged at most once.
// A run ends in an outcome, not an exception: its caller decides what it means (the CLI and the wizard make an
// error of it, run-errors.ts; the daemon pauses, holds or logs).
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_LIFETIME_SECONDS } from '../contract/claims.js';
import { findAgentSku, type AgentSku } from '../contract/agents.js';
import { normalizeEmail } from '../contract/email.js';
import { SvcError } from '../contract/errors.js';
import type { ExecuteResponse } from '../contract/schemas.js';
import type { Clock } from '../lib/clock.js';
import type { SqliteDatabase } from '../lib/sqlite.js';
import type { StoredJwt } from './credentials.js';
import { agentNotFound } from './catalog.js';
import type { ServiceClient } from './service-client.js';
import { processIsAlive } from './process-alive.js';
import { journalRunSettled, journalRunStarted, pendingRuns, type RunSource } from './store/journal.js';
import { planAfterRun } from './store/schedules.js';

export interface RunDeps {
  db: SqliteDatabase;
  client: ServiceClient;
  clock: Clock;
  jwt: StoredJwt;
  source: RunSource;
  /** This process: its own pending rows are in flight, not lost. */
  pid?: number;
}

export interface RunResult {
  idempotency_key: string;
  run_id: string;
  agent_id: string;
  status: ExecuteResponse['status'];
  charged_cents: number;
  balance_cents: number;
  output: unknown;
  started_at: string;
  finished_at: string;
}

/**
 * A key is kept by the service for 24 h; a replay after that could run and charge a second time, so a row this
 * old is closed as `failed` with error_code outcome_unknown instead (an hour of margin for clock skew).
 */
const REPLAY_WINDOW_MS = (IDEMPOTENCY_KEY_LIFETIME_SECONDS - 3600) * 1000;

/** What execute's answer means for the journal row. */
type Settlement =
  /** Answered: the run succeeded, or failed at the agent (not charged). */
  | { kind: 'settled'; result: RunResult }
  /** Refused before a charge (a 4xx): insufficient balance, a refused token, a bad request. */
  | { kind: 'refused'; status: 'insufficient_balance' | 'failed'; error: SvcError }
  /** No answer, or "still running", or a server failure: the row stays pending and its key decides later. */
  | { kind: 'unknown'; error: SvcError };

/** What became of one run, with the agent it was and the key it is journaled under. */
export type RunOutcome = Settlement & { agent: AgentSku; idempotency_key: string };

async function executeOnce(deps: RunDeps, row: { idempotency_key: string; agent_id: string; user_id: string }): Promise<Settlement> {
  try {
    const response = await deps.client.execute(deps.jwt.token, { user_id: row.user_id, agent_id: row.agent_id }, row.idempotency_key);
    return { kind: 'settled', result: { idempotency_key: row.idempotency_key, ...response } };
  } catch (error) {
    if (!(error instanceof SvcError)) return { kind: 'unknown', error: new SvcError('failed', String((error as Error)?.message ?? error)) };
    // Not answered, or answered "still running" or a server failure: whether it ran is unknown; the key decides later.
    if (error.code === 'service_unreachable' || error.code === 'request_in_progress' || error.status >= 500) return { kind: 'unknown', error };
    // Any other 4xx refused the request before a charge (insufficient_balance: nothing of it stays at the service).
    return { kind: 'refused', status: error.code === 'insufficient_balance' ? 'insufficient_balance' : 'failed', error };
  }
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
        status: result.status,
        run_id: result.run_id,
        charged_cents: result.charged_cents,
        balance_cents: result.balance_cents,
        error_code: result.status === 'failed' ? 'agent_failed' : null,
        output: result.output,
      },
      now,
    );
    // The daemon plans its own runs when it starts them, and its replays from now (store/schedules.ts).
    if (result.status === 'succeeded' && deps.source !== 'daemon') planAfterRun(deps.db, row.agent_id, row.started_at);
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
  settled: number;
  /** Closed without an answer: older than the service keeps keys. */
  expired: number;
  /** Still pending: their writer still waits, another user's, or the service did not answer. */
  left: number;
}

/** Replays this node's lost runs with their own keys, so each is settled exactly once. */
export async function settlePendingRuns(deps: RunDeps): Promise<PendingSettlement> {
  const summary: PendingSettlement = { settled: 0, expired: 0, left: 0 };
  const self = deps.pid ?? process.pid;
  for (const row of pendingRuns(deps.db)) {
    if (row.owner_pid !== null && row.owner_pid !== self && processIsAlive(row.owner_pid)) {
      summary.left += 1;
      continue;
    }
    if (deps.clock.now() - row.started_at > REPLAY_WINDOW_MS) {
      journalRunSettled(deps.db, { idempotency_key: row.idempotency_key, status: 'failed', error_code: 'outcome_unknown' }, deps.clock.now());
      summary.expired += 1;
      continue;
    }
    // Keys are per user at the service: another user's row can only be replayed with that user's token.
    const userId = row.user_id ?? deps.jwt.sub;
    if (normalizeEmail(userId) !== normalizeEmail(deps.jwt.sub)) {
      summary.left += 1;
      continue;
    }
    const outcome = await executeOnce(deps, { idempotency_key: row.idempotency_key, agent_id: row.agent_id, user_id: userId });
    if (outcome.kind === 'unknown') {
      summary.left += 1;
      // Unreachable now: the rest would fail the same way.
      if (outcome.error.code === 'service_unreachable') break;
      continue;
    }
    settle(deps, row, outcome);
    summary.settled += 1;
  }
  return summary;
}

/** Runs an agent once, journaled. Throws only when it cannot start one (an unknown agent, the store failing). */
export async function runAgent(deps: RunDeps, agentId: string): Promise<RunOutcome> {
  const sku = findAgentSku(agentId);
  if (sku === undefined) throw agentNotFound(agentId);
  const key = randomUUID();
  const startedAt = deps.clock.now();
  journalRunStarted(
    deps.db,
    { idempotency_key: key, agent_id: sku.agent_id, source: deps.source, price_cents: sku.price_cents, user_id: deps.jwt.sub, owner_pid: deps.pid ?? process.pid },
    startedAt,
  );
  const outcome = await executeOnce(deps, { idempotency_key: key, agent_id: sku.agent_id, user_id: deps.jwt.sub });
  settle(deps, { idempotency_key: key, agent_id: sku.agent_id, started_at: startedAt }, outcome);
  return { ...outcome, agent: sku, idempotency_key: key };
}

// `run` (spec §4 execute, DECISIONS.md "Execute"): every run is journaled with its Idempotency-Key BEFORE the call,
// so an answer lost to the network leaves a `pending` row that a later run (or the daemon) replays with the same
// key and body. The service answers a replay with the first response: a run is charged at most once.
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_LIFETIME_SECONDS } from '../contract/claims.js';
import { findAgentSku } from '../contract/agents.js';
import { normalizeEmail } from '../contract/email.js';
import { SvcError } from '../contract/errors.js';
import { formatDollars } from '../contract/money.js';
import type { ExecuteResponse } from '../contract/schemas.js';
import type { Clock } from '../lib/clock.js';
import type { SqliteDatabase } from '../lib/sqlite.js';
import type { StoredJwt } from './credentials.js';
import { agentNotFound } from './registrations.js';
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

/** What execute's answer means for the journal row, and the error to raise (if any). */
type Settlement =
  | { kind: 'settled'; result: RunResult }
  | { kind: 'refused'; status: 'insufficient_balance' | 'failed'; error: SvcError }
  | { kind: 'unknown'; error: SvcError };

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

/** Runs an agent once, journaled; throws a typed error for every outcome but success. */
export async function runAgent(deps: RunDeps, agentId: string): Promise<RunResult> {
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
  switch (outcome.kind) {
    case 'settled': {
      const { result } = outcome;
      if (result.status === 'failed') {
        throw new SvcError('failed', `the run of ${sku.agent_id} failed at the agent; it was not charged`, {
          remedy: 'See the run output in `swarm-node runs --json`; retry with swarm-node run.',
          extensions: { run_id: result.run_id, charged_cents: result.charged_cents, balance_cents: result.balance_cents, output: result.output },
        });
      }
      return result;
    }
    case 'refused':
      throw outcome.status === 'insufficient_balance' ? insufficientBalance(outcome.error, sku.price_cents) : outcome.error;
    case 'unknown':
      throw new SvcError(outcome.error.code, `${outcome.error.message}; the run is journaled as pending (key ${key})`, {
        remedy:
          'The next `swarm-node run` (or the daemon) settles it by replaying the same key, so it is never charged twice. ' +
          (outcome.error.remedy ?? ''),
        extensions: { ...outcome.error.extensions, idempotency_key: key, run_status: 'pending' },
      });
  }
}

/** spec §7: the answer carries wallet_login_url; say what to do with it. */
function insufficientBalance(error: SvcError, priceCents: number): SvcError {
  const url = typeof error.extensions.wallet_login_url === 'string' ? error.extensions.wallet_login_url : undefined;
  const balance = typeof error.extensions.balance_cents === 'number' ? error.extensions.balance_cents : undefined;
  const message =
    balance === undefined
      ? error.message
      : `insufficient balance: the wallet holds ${formatDollars(balance)}, one run costs ${formatDollars(priceCents)}`;
  return new SvcError('insufficient_balance', message, {
    remedy: `Fund the wallet${url === undefined ? '' : ` at ${url}`} (swarm-node wallet login signs you in there), then run again.`,
    extensions: { ...error.extensions, price_cents: priceCents },
  });
}

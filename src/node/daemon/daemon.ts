// The node's daemon (issue 6): runs the registered agents on their intervals, billed exactly once whatever happens.
//
// Each tick (about a second) reads registrations and schedules from the database, so the CLI's changes apply
// without a restart, and starts every due agent through runAgent, which journals the run with its
// Idempotency-Key before execute is called. A tick never waits for the network: runs, balance checks and probes
// are background tasks, so the recorded tick stays regular and `status` can tell a live daemon from a hung one.
//
// Before any agent is scheduled — at start, and after the service was unreachable or refused the token — the
// daemon asks the service for the wallet (reachable? token accepted?) and then settles every unsettled journal row
// by replaying its own key. Whatever cannot be settled yet (a run the service is still finishing) is retried on a
// backoff. Nothing is ever caught up by bursts: a missed interval runs once.
import { setTimeout as sleep } from 'node:timers/promises';
import { findAgentSku, type AgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { readCredentials, type StoredJwt } from '../credentials.js';
import { runAgent, settlePendingRuns, type RunDeps, type RunOutcome } from '../run-agent.js';
import type { ServiceClient } from '../service-client.js';
import { daysLeft } from '../session.js';
import { EXPIRY_WARNING_DAYS } from '../status.js';
import {
  claimDaemon,
  recordGlobalPause,
  recordStopped,
  recordTick,
  type GlobalPauseReason,
} from '../store/daemon-state.js';
import {
  hasUnsettledRun,
  pendingRuns,
  releaseAbandonedRuns,
  releaseRun,
  releaseRunsOf,
  settledAmong,
  spendSince,
  type SettledRun,
} from '../store/journal.js';
import {
  pauseAgent,
  planAfterReplayedRun,
  planRunAt,
  recordRunStarted,
  resumeAgent,
  scheduledAgents,
  type ScheduledAgent,
} from '../store/schedules.js';
import { DAY_MS, startOfNextUtcDay, startOfUtcDay } from '../utc-day.js';
import { DaemonLog, type LogFields } from './log.js';
import { collectPeriodically } from './memory.js';
import { capAllowsRun, isDue, nextBackoff, nextRunAfter, pauseIsOver } from './schedule.js';

export const DEFAULT_TICK_MS = 1_000;
/** First wait of the slow re-checks: balance, an unreachable service, a refused token, unsettled rows. */
export const DEFAULT_BACKOFF_MS = 30_000;
/** In-flight runs get this long after SIGTERM (systemd's TimeoutStopSec is 30 s); their rows stay pending after. */
export const DEFAULT_DRAIN_MS = 20_000;

/**
 * Settlements run as "pid 0", which owns no row: every row of a live process is left alone — this daemon's own
 * runs in flight included — and only the rows nobody awaits are replayed: their writer is gone, or released them.
 */
const NO_PROCESS = 0;

/** Past the longest client deadline (timeout_seconds ≤ 600) with a margin: nobody still waits for such a row. */
const ABANDONED_AFTER_MS = 15 * 60_000;

export interface DaemonDeps {
  db: SqliteDatabase;
  client: ServiceClient;
  clock: Clock;
  /** Where the log lines go (stdout, for journald). */
  write: (line: string) => void;
  credentialsFile: string;
  pid: number;
  version: string;
  tickMs?: number;
  backoffMs?: number;
  drainMs?: number;
  /** Shown in the start line. */
  home?: string;
}

export interface DaemonOutcome {
  /** Every in-flight run finished before the drain deadline. */
  drained: boolean;
  /** Journal rows still pending at exit: the next start settles them. */
  pending: number;
}

/**
 * Runs until `stop` aborts (its reason, when a string, is logged as the signal that stopped it), then lets in-flight
 * work finish (bounded) and records the stop.
 */
export async function runDaemon(deps: DaemonDeps, stop: AbortSignal): Promise<DaemonOutcome> {
  const log = new DaemonLog(deps.write, deps.clock);
  const onStop = (): void => log.info('signal', { signal: typeof stop.reason === 'string' ? stop.reason : undefined });
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  const stopCollecting = collectPeriodically();
  try {
    return await new NodeDaemon({ ...deps, log }).run(stop);
  } finally {
    stopCollecting();
  }
}

type RunningDeps = DaemonDeps & { log: DaemonLog };

/** What must happen before agents are scheduled. */
type Phase = 'probe' | 'settle' | 'schedule';

class NodeDaemon {
  readonly #deps: RunningDeps;
  readonly #tickMs: number;
  readonly #backoffMs: number;
  readonly #drainMs: number;

  /** Every background promise (runs, checks, settlements), so a stop can wait for them. */
  readonly #tasks = new Set<Promise<void>>();
  /** One run per agent at a time. */
  readonly #running = new Set<string>();

  #phase: Phase = 'probe';
  #probeAt = 0;
  #probeBackoff: number | undefined;
  #probing = false;
  /** The token the service refused (401): not used again until it changes or a slow re-check accepts it. */
  #rejectedToken: string | undefined;

  #settling = false;
  #settleRetryAt: number | undefined;
  #settleBackoff: number | undefined;

  #checkingBalance = false;
  readonly #balanceBackoff = new Map<string, number>();
  /** Agents whose wallet_login_url was logged in their current pause (spec §7: once per episode). */
  readonly #walletUrlLogged = new Set<string>();
  /** The UTC day for which each agent's cap was logged. */
  readonly #capLoggedDay = new Map<string, number>();
  /** Agents whose wait for an unsettled run was logged. */
  readonly #deferLogged = new Set<string>();
  /** Agents whose unknown SKU was logged. */
  readonly #unknownLogged = new Set<string>();

  /** The stop is done; a run still answering now is left to the next start. */
  #finished = false;
  #globalPause: { reason: GlobalPauseReason; since: number; until: number | null } | undefined;
  #expiryWarned: { token: string; at: number } | undefined;

  constructor(deps: RunningDeps) {
    this.#deps = deps;
    this.#tickMs = deps.tickMs ?? DEFAULT_TICK_MS;
    this.#backoffMs = deps.backoffMs ?? DEFAULT_BACKOFF_MS;
    this.#drainMs = deps.drainMs ?? DEFAULT_DRAIN_MS;
  }

  get #log(): DaemonLog {
    return this.#deps.log;
  }

  #now(): number {
    return this.#deps.clock.now();
  }

  async run(stop: AbortSignal): Promise<DaemonOutcome> {
    const { db, pid, version } = this.#deps;
    const { previousPid } = claimDaemon(db, { pid, version, tickMs: this.#tickMs }, this.#now());
    // The previous daemon is gone (claimDaemon checked): its runs in flight when it died are awaited by nobody.
    if (previousPid !== null) releaseRunsOf(db, previousPid);
    this.#log.info('daemon_started', {
      pid,
      version,
      home: this.#deps.home,
      base_url: this.#deps.client.baseUrl,
      agents: scheduledAgents(db).length,
      pending_runs: pendingRuns(db).length,
    });
    let failing: string | undefined;
    while (!stop.aborted) {
      try {
        this.#tick();
        if (failing !== undefined) this.#log.info('tick_recovered');
        failing = undefined;
      } catch (error) {
        // A busy or failing database must not end the daemon: the next tick tries again (logged once per failure).
        if (messageOf(error) !== failing) this.#log.error('tick_failed', { error: messageOf(error) });
        failing = messageOf(error);
      }
      await sleep(this.#tickMs, undefined, { signal: stop }).catch(() => undefined);
    }
    return this.#shutdown();
  }

  async #shutdown(): Promise<DaemonOutcome> {
    this.#log.info('stopping', { in_flight_runs: this.#running.size });
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      Promise.allSettled([...this.#tasks]).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.#drainMs);
      }),
    ]);
    clearTimeout(timer);
    this.#finished = true;
    const now = this.#now();
    recordStopped(this.#deps.db, now);
    const pending = pendingRuns(this.#deps.db).length;
    if (drained) this.#log.info('daemon_stopped', { pending_runs: pending });
    else this.#log.warn('daemon_stopped', { drained: false, in_flight_runs: this.#running.size, pending_runs: pending, note: 'pending runs are settled at the next start' });
    return { drained, pending };
  }

  #tick(): void {
    const now = this.#now();
    recordTick(this.#deps.db, now);
    const jwt = this.#signedIn(now);
    if (jwt === undefined) return;
    this.#warnIfExpiring(jwt, now);

    if (this.#phase === 'probe') {
      const newToken = this.#rejectedToken !== undefined && jwt.token !== this.#rejectedToken;
      if (!this.#probing && (now >= this.#probeAt || newToken)) this.#track(this.#probe(jwt));
      return;
    }
    if (this.#phase === 'settle') {
      if (!this.#settling) this.#track(this.#settle(jwt, true));
      return;
    }
    if (this.#settleRetryAt !== undefined && now >= this.#settleRetryAt && !this.#settling) this.#track(this.#settle(jwt, false));

    const agents = scheduledAgents(this.#deps.db);
    const awaitingBalance: ScheduledAgent[] = [];
    for (const agent of agents) {
      if (pauseIsOver(agent, now)) {
        if (agent.paused_reason === 'insufficient_balance') awaitingBalance.push(agent);
        else resumeAgent(this.#deps.db, agent.agent_id);
        continue;
      }
      if (agent.next_run_at === null && agent.paused_reason === null) {
        planRunAt(this.#deps.db, agent.agent_id, now);
        agent.next_run_at = now;
      } else if (agent.next_run_at !== null && agent.next_run_at > nextRunAfter(now, agent.every_seconds)) {
        // Planned further out than one interval: the clock was set back (or the row was written by a host whose
        // clock ran ahead). Waiting for that time would skip runs; one interval from now is the plan.
        const next = nextRunAfter(now, agent.every_seconds);
        planRunAt(this.#deps.db, agent.agent_id, next);
        this.#log.info('schedule_reset', { agent: agent.agent_id, planned_at: new Date(agent.next_run_at).toISOString(), next_run_at: new Date(next).toISOString() });
        agent.next_run_at = next;
      }
      if (isDue(agent, now) && !this.#running.has(agent.agent_id)) this.#start(agent, jwt, now);
    }
    if (awaitingBalance.length > 0 && !this.#checkingBalance) this.#track(this.#checkBalance(awaitingBalance, jwt));
  }

  /** The stored JWT when it can be used; otherwise every agent is held and the reason logged once. */
  #signedIn(now: number): StoredJwt | undefined {
    let jwt: StoredJwt | undefined;
    try {
      jwt = readCredentials(this.#deps.credentialsFile).jwt;
    } catch (error) {
      this.#pauseAll('credentials_unreadable', null, { error: messageOf(error) });
      return undefined;
    }
    if (jwt === undefined) {
      this.#pauseAll('not_signed_in', null, { remedy: 'swarm-node login' });
      return undefined;
    }
    this.#log.mask(jwt.token);
    if (jwt.exp * 1000 <= now) {
      this.#pauseAll('token_expired', null, { expires_at: new Date(jwt.exp * 1000).toISOString(), remedy: 'swarm-node login' });
      return undefined;
    }
    // A sign-in problem that is gone does not resume anything by itself: the probe that #pauseAll asked for decides.
    return jwt;
  }

  #warnIfExpiring(jwt: StoredJwt, now: number): void {
    const expMs = jwt.exp * 1000;
    if (expMs - now > EXPIRY_WARNING_DAYS * DAY_MS) return;
    const warned = this.#expiryWarned;
    if (warned !== undefined && warned.token === jwt.token && now - warned.at < DAY_MS) return;
    this.#expiryWarned = { token: jwt.token, at: now };
    this.#log.warn('token_expiring', { expires_at: new Date(expMs).toISOString(), days_left: daysLeft(expMs, now), remedy: 'swarm-node login' });
  }

  /** Reachable, and the token accepted: the wallet answers. Then unsettled rows are settled before scheduling. */
  async #probe(jwt: StoredJwt): Promise<void> {
    this.#probing = true;
    try {
      const wallet = await this.#deps.client.wallet(jwt.token);
      this.#rejectedToken = undefined;
      this.#probeBackoff = undefined;
      if (this.#globalPause !== undefined) this.#resumeAll();
      this.#log.info('service_ready', { user: wallet.user_id, balance_cents: wallet.balance_cents });
      this.#phase = 'settle';
    } catch (error) {
      if (!this.#onServiceError(error, jwt)) {
        // Any other refusal of a read is as good as an outage here: ask again later.
        this.#holdForProbe('service_unreachable', error);
      }
    } finally {
      this.#probing = false;
    }
  }

  /** Replays unsettled rows with their own keys. `blocking`: scheduling waits for it (at start, after a hold). */
  async #settle(jwt: StoredJwt, blocking: boolean): Promise<void> {
    this.#settling = true;
    try {
      const deps: RunDeps = { db: this.#deps.db, client: this.#deps.client, clock: this.#deps.clock, jwt, source: 'daemon', pid: NO_PROCESS };
      releaseAbandonedRuns(this.#deps.db, this.#now() - ABANDONED_AFTER_MS);
      // This daemon's own runs in flight are settled by their own call, not here.
      const keys = pendingRuns(this.#deps.db)
        .filter((run) => run.owner_pid !== this.#deps.pid)
        .map((run) => run.idempotency_key);
      const summary = await settlePendingRuns(deps);
      if (summary.settled + summary.expired + summary.left > 0) this.#log.info('pending_runs_settled', { ...summary });
      this.#afterSettlement(settledAmong(this.#deps.db, keys));
      if (summary.left > 0) {
        this.#settleBackoff = nextBackoff(this.#settleBackoff, this.#backoffMs);
        this.#settleRetryAt = this.#now() + this.#settleBackoff;
      } else {
        this.#settleBackoff = undefined;
        this.#settleRetryAt = undefined;
      }
      if (blocking && this.#phase === 'settle') this.#phase = 'schedule';
    } catch (error) {
      if (!this.#onServiceError(error, jwt)) this.#log.error('settle_failed', { error: messageOf(error) });
    } finally {
      this.#settling = false;
    }
  }

  /** One line per settled run; a run the service ran is this interval's run of its agent. */
  #afterSettlement(runs: SettledRun[]): void {
    const now = this.#now();
    for (const run of runs) {
      this.#log.info('run_settled', {
        agent: run.agent_id,
        status: run.status,
        run_id: run.run_id,
        charged_cents: run.charged_cents,
        error_code: run.error_code,
        key: run.idempotency_key,
      });
      if (run.run_id !== null) planAfterReplayedRun(this.#deps.db, run.agent_id, now);
    }
  }

  #start(agent: ScheduledAgent, jwt: StoredJwt, now: number): void {
    const { db } = this.#deps;
    const sku = findAgentSku(agent.agent_id);
    if (sku === undefined) {
      if (!this.#unknownLogged.has(agent.agent_id)) this.#log.error('unknown_agent', { agent: agent.agent_id, remedy: `swarm-node unregister ${agent.agent_id}` });
      this.#unknownLogged.add(agent.agent_id);
      recordRunStarted(db, agent.agent_id, now, nextRunAfter(now, agent.every_seconds));
      return;
    }
    if (hasUnsettledRun(db, sku.agent_id, jwt.sub)) {
      // A crash or a lost answer left a run of it unsettled (the service may still be running it): one run of an
      // agent at a time, so it waits, still due, until the replay of that key settles it.
      if (!this.#deferLogged.has(sku.agent_id)) this.#log.info('run_deferred', { agent: sku.agent_id, reason: 'unsettled_run', next_settle_at: isoOrUndefined(this.#settleRetryAt) });
      this.#deferLogged.add(sku.agent_id);
      this.#settleRetryAt ??= now + this.#backoffMs;
      return;
    }
    this.#deferLogged.delete(sku.agent_id);
    const dayStart = startOfUtcDay(now);
    const { chargedCents: spentCents, pendingCents } = spendSince(db, sku.agent_id, dayStart);
    if (!capAllowsRun({ capCents: agent.daily_cap_cents, spentCents, pendingCents, priceCents: sku.price_cents })) {
      const until = startOfNextUtcDay(now);
      pauseAgent(db, sku.agent_id, 'daily_cap', until);
      if (this.#capLoggedDay.get(sku.agent_id) !== dayStart) {
        this.#capLoggedDay.set(sku.agent_id, dayStart);
        this.#log.info('daily_cap_reached', {
          agent: sku.agent_id,
          spent_cents: spentCents + pendingCents,
          cap_cents: agent.daily_cap_cents,
          price_cents: sku.price_cents,
          until: new Date(until).toISOString(),
        });
      }
      return;
    }
    recordRunStarted(db, sku.agent_id, now, nextRunAfter(now, agent.every_seconds));
    this.#running.add(sku.agent_id);
    this.#track(
      this.#runOnce(sku, jwt).finally(() => {
        this.#running.delete(sku.agent_id);
      }),
    );
  }

  async #runOnce(sku: AgentSku, jwt: StoredJwt): Promise<void> {
    const deps: RunDeps = { db: this.#deps.db, client: this.#deps.client, clock: this.#deps.clock, jwt, source: 'daemon', pid: this.#deps.pid };
    let outcome: RunOutcome;
    try {
      outcome = await runAgent(deps, sku.agent_id);
    } catch (error) {
      // Not run, or not settled: the store failed.
      if (this.#finished) this.#log.warn('run_left_pending', { agent: sku.agent_id, note: 'settled at the next start' });
      else if (!(error instanceof SvcError)) this.#log.error('run_error', { agent: sku.agent_id, error: messageOf(error) });
      else if (!this.#onServiceError(error, jwt)) this.#log.warn('run_refused', { agent: sku.agent_id, code: error.code, error: error.message });
      return;
    }
    if (outcome.kind === 'settled' && outcome.result.status === 'succeeded') {
      const { result } = outcome;
      this.#log.info('run_succeeded', {
        agent: sku.agent_id,
        run_id: result.run_id,
        charged_cents: result.charged_cents,
        balance_cents: result.balance_cents,
        key: result.idempotency_key,
      });
      return;
    }
    if (this.#finished) this.#log.warn('run_left_pending', { agent: sku.agent_id, note: 'settled at the next start' });
    else this.#afterFailedRun(sku, jwt, outcome);
  }

  #afterFailedRun(sku: AgentSku, jwt: StoredJwt, outcome: RunOutcome): void {
    if (outcome.kind === 'settled') {
      // Answered: it failed at the agent and was not charged.
      const { result } = outcome;
      this.#log.warn('run_failed', { agent: sku.agent_id, run_id: result.run_id, charged_cents: result.charged_cents, balance_cents: result.balance_cents });
      return;
    }
    const { error } = outcome;
    if (outcome.kind === 'unknown') {
      // The answer was lost: the row keeps its key and is replayed by a settlement, never charged twice.
      releaseRun(this.#deps.db, outcome.idempotency_key);
      if (!this.#onServiceError(error, jwt)) {
        this.#log.warn('run_pending', { agent: sku.agent_id, key: outcome.idempotency_key, code: error.code, error: firstSentence(error.message) });
        this.#settleRetryAt ??= this.#now() + this.#backoffMs;
      }
      return;
    }
    if (outcome.status === 'insufficient_balance') {
      this.#pauseForBalance(sku, error.extensions);
      return;
    }
    if (this.#onServiceError(error, jwt)) return;
    const facts = error.extensions;
    if (typeof facts.run_id === 'string') {
      this.#log.warn('run_failed', { agent: sku.agent_id, run_id: facts.run_id, charged_cents: numberOf(facts.charged_cents), balance_cents: numberOf(facts.balance_cents) });
      return;
    }
    this.#log.warn('run_refused', { agent: sku.agent_id, code: error.code, error: error.message });
  }

  /** spec §7: hold the agent, say where to fund the wallet (once), re-check the balance slowly; never retry execute. */
  #pauseForBalance(sku: AgentSku, facts: Record<string, unknown>): void {
    const backoff = nextBackoff(undefined, this.#backoffMs);
    this.#balanceBackoff.set(sku.agent_id, backoff);
    const until = this.#now() + backoff;
    pauseAgent(this.#deps.db, sku.agent_id, 'insufficient_balance', until);
    const fields: LogFields = {
      agent: sku.agent_id,
      reason: 'insufficient_balance',
      balance_cents: numberOf(facts.balance_cents),
      price_cents: sku.price_cents,
      next_check_at: new Date(until).toISOString(),
    };
    if (!this.#walletUrlLogged.has(sku.agent_id)) {
      this.#walletUrlLogged.add(sku.agent_id);
      fields.wallet_login_url = stringOf(facts.wallet_login_url);
      fields.remedy = 'fund the wallet; the daemon resumes by itself';
    }
    this.#log.warn('agent_paused', fields);
  }

  /** One wallet read for every agent whose balance pause is up: resume those it covers, wait longer for the rest. */
  async #checkBalance(agents: ScheduledAgent[], jwt: StoredJwt): Promise<void> {
    this.#checkingBalance = true;
    try {
      const wallet = await this.#deps.client.wallet(jwt.token);
      const now = this.#now();
      for (const agent of agents) {
        const price = findAgentSku(agent.agent_id)?.price_cents ?? Number.POSITIVE_INFINITY;
        if (wallet.balance_cents >= price) {
          resumeAgent(this.#deps.db, agent.agent_id);
          this.#balanceBackoff.delete(agent.agent_id);
          this.#walletUrlLogged.delete(agent.agent_id);
          this.#log.info('agent_resumed', { agent: agent.agent_id, after: 'insufficient_balance', balance_cents: wallet.balance_cents });
        } else {
          const backoff = nextBackoff(this.#balanceBackoff.get(agent.agent_id), this.#backoffMs);
          this.#balanceBackoff.set(agent.agent_id, backoff);
          pauseAgent(this.#deps.db, agent.agent_id, 'insufficient_balance', now + backoff);
          this.#log.info('balance_still_low', {
            agent: agent.agent_id,
            balance_cents: wallet.balance_cents,
            price_cents: price,
            next_check_at: new Date(now + backoff).toISOString(),
          });
        }
      }
    } catch (error) {
      if (!this.#onServiceError(error, jwt)) this.#log.warn('balance_check_failed', { error: messageOf(error) });
    } finally {
      this.#checkingBalance = false;
    }
  }

  /** An unreachable service or a refused token holds every agent until a probe succeeds; true when it was one of them. */
  #onServiceError(error: unknown, jwt: StoredJwt): boolean {
    if (!(error instanceof SvcError)) return false;
    if (error.code === 'service_unreachable' || error.code === 'service_unavailable') {
      this.#holdForProbe('service_unreachable', error);
      return true;
    }
    if (error.code === 'unauthorized') {
      this.#rejectedToken = jwt.token;
      this.#holdForProbe('token_rejected', error);
      return true;
    }
    return false;
  }

  #holdForProbe(reason: 'service_unreachable' | 'token_rejected', error: unknown): void {
    const sameHold = this.#phase === 'probe' && this.#globalPause?.reason === reason;
    this.#probeBackoff = nextBackoff(sameHold ? this.#probeBackoff : undefined, this.#backoffMs);
    this.#probeAt = this.#now() + this.#probeBackoff;
    this.#phase = 'probe';
    const remedy = reason === 'token_rejected' ? 'swarm-node login (picked up without a restart)' : undefined;
    this.#pauseAll(reason, this.#probeAt, { error: firstSentence(messageOf(error)), remedy });
  }

  /** Holds every agent; logs only when the reason changes (once per outage, once per sign-in problem). */
  #pauseAll(reason: GlobalPauseReason, until: number | null, fields: LogFields): void {
    const now = this.#now();
    const previous = this.#globalPause;
    if (previous?.reason === reason) {
      if (previous.until !== until) {
        previous.until = until;
        recordGlobalPause(this.#deps.db, previous, now);
      }
      return;
    }
    this.#globalPause = { reason, since: now, until };
    recordGlobalPause(this.#deps.db, this.#globalPause, now);
    this.#log.warn('paused_all', { reason, ...fields, ...(until === null ? {} : { next_check_at: new Date(until).toISOString() }) });
    if (isCredentialProblem(reason)) {
      // A new sign-in must be checked with the service before anything runs.
      this.#phase = 'probe';
      this.#probeAt = 0;
    }
  }

  #resumeAll(): void {
    const previous = this.#globalPause;
    if (previous === undefined) return;
    const now = this.#now();
    this.#globalPause = undefined;
    recordGlobalPause(this.#deps.db, null, now);
    this.#log.info('resumed_all', { after: previous.reason, paused_seconds: Math.round((now - previous.since) / 1000) });
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    void task.finally(() => this.#tasks.delete(task));
  }
}

function isCredentialProblem(reason: GlobalPauseReason): boolean {
  return reason === 'not_signed_in' || reason === 'token_expired' || reason === 'credentials_unreadable';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The first sentence: errors from runAgent append remedies that a one-line log does not need. */
function firstSentence(message: string): string {
  return message.split('; ')[0] ?? message;
}

function isoOrUndefined(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

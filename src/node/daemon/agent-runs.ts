// The daemon's runs (docs/operations.md "Logs"): each tick starts every due agent, one run per agent at a time,
// within its daily cap, and acts on what each run ends in: logged, paused for the balance, left to a settlement, or
// a hold of all.
import { findAgentSku, type AgentSku } from '../../contract/agents.js';
import { SvcError, messageOf } from '../../contract/errors.js';
import type { NodeCaller } from '../work/caller.js';
import { runAgent, type RunDeps, type RunOutcome } from '../runs/run-agent.js';
import { hasUnsettledRun, releaseRun, spendSince } from '../store/journal.js';
import { pauseAgent, planRunAt, recordRunStarted, resumeAgent, scheduledAgents, type ScheduledAgent } from '../store/schedules.js';
import { startOfNextUtcDay, startOfUtcDay } from '../../lib/clock.js';
import type { BalancePauses } from './balance-pause.js';
import { pauseForBudget } from './budget-pause.js';
import { firstSentence, isoOrUndefined, numberOf, type DaemonCore } from './core.js';
import { capAllowsRun, isDue, nextRunAfter, pauseIsOver } from './schedule.js';
import type { ServiceHold } from './service-hold.js';
import type { PendingSettlement } from './settlement.js';

export class AgentRuns {
  readonly #core: DaemonCore;
  readonly #hold: ServiceHold;
  readonly #settlement: PendingSettlement;
  readonly #balance: BalancePauses;
  /** Agents with a run in flight: one run per agent at a time. */
  readonly running = new Set<string>();
  /** The UTC day for which each agent's cap was logged. */
  readonly #capLoggedDay = new Map<string, number>();
  /** Agents whose wait for an unsettled run was logged. */
  readonly #deferLogged = new Set<string>();
  /** Agents whose unknown SKU was logged. */
  readonly #unknownLogged = new Set<string>();

  constructor(core: DaemonCore, hold: ServiceHold, settlement: PendingSettlement, balance: BalancePauses) {
    this.#core = core;
    this.#hold = hold;
    this.#settlement = settlement;
    this.#balance = balance;
  }

  /** Registrations and schedules as the database has them now, so the CLI's changes apply without a restart. */
  tick(caller: NodeCaller, now: number): void {
    const { db, log } = this.#core;
    const awaitingBalance: ScheduledAgent[] = [];
    for (const agent of scheduledAgents(db)) {
      if (pauseIsOver(agent, now)) {
        if (agent.paused_reason === 'insufficient_balance') awaitingBalance.push(agent);
        else resumeAgent(db, agent.agent_id);
        continue;
      }
      if (agent.next_run_at === null && agent.paused_reason === null) {
        planRunAt(db, agent.agent_id, now);
        agent.next_run_at = now;
      } else if (agent.next_run_at !== null && agent.next_run_at > nextRunAfter(now, agent.every_seconds)) {
        // Planned further out than one interval: the clock was set back (or the row was written by a host whose
        // clock ran ahead). Waiting for that time would skip runs; one interval from now is the plan.
        const next = nextRunAfter(now, agent.every_seconds);
        planRunAt(db, agent.agent_id, next);
        log.info('schedule_reset', {
          agent: agent.agent_id,
          planned_at: new Date(agent.next_run_at).toISOString(),
          next_run_at: new Date(next).toISOString(),
        });
        agent.next_run_at = next;
      }
      if (isDue(agent, now) && !this.running.has(agent.agent_id) && this.#core.freeSlots() > 0) this.#start(agent, caller, now);
    }
    this.#balance.checkIfDue(awaitingBalance, caller);
  }

  #start(agent: ScheduledAgent, caller: NodeCaller, now: number): void {
    const { db, log } = this.#core;
    const sku = findAgentSku(agent.agent_id);
    if (sku === undefined) {
      if (!this.#unknownLogged.has(agent.agent_id))
        log.error('unknown_agent', { agent: agent.agent_id, remedy: `swarm-node unregister ${agent.agent_id}` });
      this.#unknownLogged.add(agent.agent_id);
      recordRunStarted(db, agent.agent_id, now, nextRunAfter(now, agent.every_seconds));
      return;
    }
    if (hasUnsettledRun(db, sku.agent_id, caller.user_id)) {
      // A crash or a lost answer left a run of it unsettled (the service may still be running it): one run of an
      // agent at a time, so it waits, still due, until the replay of that key settles it.
      if (!this.#deferLogged.has(sku.agent_id))
        log.info('run_deferred', {
          agent: sku.agent_id,
          reason: 'unsettled_run',
          next_settle_at: isoOrUndefined(this.#settlement.retryAt),
        });
      this.#deferLogged.add(sku.agent_id);
      this.#settlement.planRetry(now);
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
        log.info('daily_cap_reached', {
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
    this.running.add(sku.agent_id);
    this.#core.takeSlot();
    this.#core.track(
      this.#runOnce(sku, caller).finally(() => {
        this.running.delete(sku.agent_id);
        this.#core.releaseSlot();
      }),
    );
  }

  async #runOnce(sku: AgentSku, caller: NodeCaller): Promise<void> {
    const core = this.#core;
    const deps: RunDeps = {
      db: core.db,
      client: core.client,
      clock: core.clock,
      caller,
      source: 'daemon',
      pid: core.pid,
      signal: core.runsSignal,
    };
    let outcome: RunOutcome;
    try {
      outcome = await runAgent(deps, sku.agent_id);
    } catch (error) {
      // Not run, or not settled: the store failed.
      if (core.finished) core.log.warn('run_left_pending', { agent: sku.agent_id, note: 'settled at the next start' });
      // A journal that cannot be written (a full disk) stops the taking of work and says so once (journal-health.ts).
      else if (!(error instanceof SvcError)) {
        if (!core.journal.failed(error)) core.log.error('run_error', { agent: sku.agent_id, error: messageOf(error) });
      } else if (!this.#hold.onServiceError(error, caller))
        core.log.warn('run_refused', { agent: sku.agent_id, code: error.code, error: error.message });
      return;
    }
    if (outcome.kind === 'settled' && outcome.result.status === 'succeeded') {
      const { result } = outcome;
      core.log.info('run_succeeded', {
        agent: sku.agent_id,
        run_id: result.run_id,
        charged_cents: result.charged_cents,
        balance_cents: result.balance_cents,
        key: result.idempotency_key,
      });
      return;
    }
    if (core.finished) core.log.warn('run_left_pending', { agent: sku.agent_id, note: 'settled at the next start' });
    else this.#afterFailedRun(sku, caller, outcome);
  }

  #afterFailedRun(sku: AgentSku, caller: NodeCaller, outcome: RunOutcome): void {
    const { log } = this.#core;
    if (outcome.kind === 'settled') {
      // Answered: it failed at the agent and was not charged.
      const { result } = outcome;
      log.warn('run_failed', {
        agent: sku.agent_id,
        run_id: result.run_id,
        charged_cents: result.charged_cents,
        balance_cents: result.balance_cents,
      });
      return;
    }
    const { error } = outcome;
    if (outcome.kind === 'unknown') {
      // The answer was lost: the row keeps its key and a settlement asks the service for its run, never charged twice.
      releaseRun(this.#core.db, outcome.idempotency_key);
      if (!this.#hold.onServiceError(error, caller)) {
        log.warn('run_pending', {
          agent: sku.agent_id,
          key: outcome.idempotency_key,
          code: error.code,
          error: firstSentence(error.message),
        });
        this.#settlement.planRetry(this.#core.now());
      }
      return;
    }
    if (outcome.kind === 'not_sent') {
      // Never reached the service: nothing ran, nothing was charged; the schedule runs it again at its next time.
      log.warn('run_not_sent', { agent: sku.agent_id, key: outcome.idempotency_key, error: firstSentence(error.message) });
      this.#hold.onServiceError(error, caller);
      return;
    }
    if (outcome.status === 'insufficient_balance') {
      this.#balance.pause(sku, error.extensions);
      return;
    }
    if (error.code === 'budget_exceeded') {
      pauseForBudget(this.#core, sku, error.extensions);
      return;
    }
    if (this.#hold.onServiceError(error, caller)) return;
    const facts = error.extensions;
    if (typeof facts.run_id === 'string') {
      log.warn('run_failed', {
        agent: sku.agent_id,
        run_id: facts.run_id,
        charged_cents: numberOf(facts.charged_cents),
        balance_cents: numberOf(facts.balance_cents),
      });
      return;
    }
    log.warn('run_refused', { agent: sku.agent_id, code: error.code, error: error.message });
  }
}

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
//
// This file is the loop and its phases; the parts are service-hold.ts (no agent runs at all), settlement.ts
// (unsettled rows), agent-runs.ts (due agents, caps, what a run ends in) and balance-pause.ts (the wallet).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ServiceClient } from '../service-client.js';
import { claimDaemon, recordStopped, recordTick } from '../store/daemon-state.js';
import { pendingRuns, releaseRunsOf } from '../store/journal.js';
import { scheduledAgents } from '../store/schedules.js';
import { AgentRuns } from './agent-runs.js';
import { BalancePauses } from './balance-pause.js';
import { DaemonCore, messageOf } from './core.js';
import { DaemonLog } from './log.js';
import { collectPeriodically } from './memory.js';
import { ServiceHold } from './service-hold.js';
import { PendingSettlement } from './settlement.js';
import { DEFAULT_BACKOFF_MS, DEFAULT_DRAIN_MS, DEFAULT_TICK_MS } from './timing.js';

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
    return await new NodeDaemon(deps, log).run(stop);
  } finally {
    stopCollecting();
  }
}

class NodeDaemon {
  readonly #deps: DaemonDeps;
  readonly #core: DaemonCore;
  readonly #tickMs: number;
  readonly #drainMs: number;
  readonly #hold: ServiceHold;
  readonly #settlement: PendingSettlement;
  readonly #runs: AgentRuns;
  /**
   * Once the service is usable (ServiceHold.ready), unsettled rows are settled before anything is scheduled: at
   * start, and again after every hold.
   */
  #phase: 'settle' | 'schedule' = 'settle';

  constructor(deps: DaemonDeps, log: DaemonLog) {
    this.#deps = deps;
    this.#tickMs = deps.tickMs ?? DEFAULT_TICK_MS;
    this.#drainMs = deps.drainMs ?? DEFAULT_DRAIN_MS;
    this.#core = new DaemonCore({ ...deps, log }, deps.backoffMs ?? DEFAULT_BACKOFF_MS);
    this.#hold = new ServiceHold(this.#core, () => {
      this.#phase = 'settle';
    });
    this.#settlement = new PendingSettlement(this.#core, this.#hold);
    this.#runs = new AgentRuns(this.#core, this.#hold, this.#settlement, new BalancePauses(this.#core, this.#hold));
  }

  async run(stop: AbortSignal): Promise<DaemonOutcome> {
    const { db, pid, version } = this.#deps;
    const { log } = this.#core;
    const { previousPid } = claimDaemon(db, { pid, version, tickMs: this.#tickMs }, this.#core.now());
    // The previous daemon is gone (claimDaemon checked): its runs in flight when it died are awaited by nobody.
    if (previousPid !== null) releaseRunsOf(db, previousPid);
    log.info('daemon_started', {
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
        if (failing !== undefined) log.info('tick_recovered');
        failing = undefined;
      } catch (error) {
        // A busy or failing database must not end the daemon: the next tick tries again (logged once per failure).
        if (messageOf(error) !== failing) log.error('tick_failed', { error: messageOf(error) });
        failing = messageOf(error);
      }
      await sleep(this.#tickMs, undefined, { signal: stop }).catch(() => undefined);
    }
    return this.#shutdown();
  }

  async #shutdown(): Promise<DaemonOutcome> {
    const { db, log } = this.#core;
    log.info('stopping', { in_flight_runs: this.#runs.running.size });
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      Promise.allSettled([...this.#core.tasks]).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.#drainMs);
      }),
    ]);
    clearTimeout(timer);
    this.#core.finished = true;
    recordStopped(db, this.#core.now());
    const pending = pendingRuns(db).length;
    if (drained) log.info('daemon_stopped', { pending_runs: pending });
    else log.warn('daemon_stopped', { drained: false, in_flight_runs: this.#runs.running.size, pending_runs: pending, note: 'pending runs are settled at the next start' });
    return { drained, pending };
  }

  #tick(): void {
    const now = this.#core.now();
    recordTick(this.#core.db, now);
    const jwt = this.#hold.signedIn(now);
    if (jwt === undefined) return;
    this.#hold.warnIfExpiring(jwt, now);

    if (!this.#hold.ready) {
      this.#hold.probeIfDue(jwt, now);
      return;
    }
    if (this.#phase === 'settle') {
      if (!this.#settlement.busy) {
        this.#core.track(
          this.#settlement.settle(jwt).then((done) => {
            if (done && this.#hold.ready && this.#phase === 'settle') this.#phase = 'schedule';
          }),
        );
      }
      return;
    }
    this.#settlement.retryIfDue(jwt, now);
    this.#runs.tick(jwt, now);
  }
}

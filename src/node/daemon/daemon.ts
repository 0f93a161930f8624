// The node's daemon (docs/architecture.md "How a run flows"): runs what the service hands this node (the runs of its
// schedules, runs started with curl or from another machine), all on this host, billed exactly once whatever happens.
//
// One long poll at a time pulls the runs; each tick (about a second) records that the daemon lives, retries what
// waits for the service and starts what the poll brought. A tick never waits for the network: runs, polls and
// probes are background tasks, so the recorded tick stays regular and `status` can tell a live daemon from a hung one.
//
// Before anything runs — at start, and after the service was unreachable or refused the node credential — the
// daemon asks the service for the wallet (reachable? credential accepted?), tells it which agents this node serves
// and the labels it carries, moves the intervals an earlier release kept here to the service (schedule-move.ts),
// reports what a crash left of runs executed here, and settles every unsettled journal row (a `swarm-node run` whose
// answer was lost) by replaying its own key. Whatever cannot be settled yet is retried on a backoff.
//
// This file is the loop and its phases; the parts are service-hold.ts (nothing runs at all), settlement.ts
// (unsettled rows, unreported results), work-puller.ts (runs the service hands over) and auto-update.ts (a newer
// release).
import { sayOffline } from './offline.js';
import { messageOf, type SvcError } from '../../contract/errors.js';
import type { NodeEnrollment } from '../identity/credentials.js';
import { syncServedAgents } from '../agents/served-agents.js';
import { moveLocalSchedules } from '../agents/schedule-move.js';
import { formatDuration } from '../agents/duration.js';
import type { NodeCaller } from '../work/caller.js';
import { claimDaemon, recordStopped, recordTick, type DaemonSupervisor } from '../store/daemon-state.js';
import { pendingRuns, releaseRunsOf } from '../store/journal.js';
import { listRegistrations } from '../store/registrations.js';
import { AutoUpdater, type AutoUpdateOptions } from './auto-update.js';
import { DaemonCore, type CoreDeps } from './core.js';
import { DaemonLog } from './log.js';
import { collectPeriodically, keepWasmOnBaselineCompiler } from './memory.js';
import { retiredError, retireNode, type Retired } from './retirement.js';
import { ServiceHold } from './service-hold.js';
import { loggingArtifacts } from './artifact-log.js';
import { PendingSettlement } from './settlement.js';
import { DEFAULT_BACKOFF_MS, DEFAULT_DRAIN_MS, DEFAULT_TICK_MS, REPORT_GRACE_MS } from './timing.js';
import { WorkPuller } from './work-puller.js';
import { isolationReport } from '../runner/isolation-report.js';

export interface DaemonDeps extends Omit<CoreDeps, 'log'> {
  /** Where the log lines go (stdout, for journald). */
  write: (line: string) => void;
  /** This node as it asks for and runs work, built from its enrollment (rebuilt when the credential rotates). */
  callerFor: (node: NodeEnrollment & { credential: string }) => NodeCaller;
  /** The labels in the node's config file, read at each catch-up; undefined when none are set (nothing is sent). */
  labels?: () => readonly string[] | undefined;
  tickMs?: number;
  backoffMs?: number;
  drainMs?: number;
  /** Shown in the start line. */
  home?: string;
  /** Where to serve /healthz and /metrics (daemon --health-addr); off when undefined. */
  healthAt?: { host: string; port: number };
  /** Checking for a newer release (auto-update.ts); off when undefined. */
  autoUpdate?: AutoUpdateOptions;
  /** Who starts it again when it exits (recorded for `upgrade`); nobody when undefined. */
  supervisor?: DaemonSupervisor;
}

export interface DaemonOutcome {
  /** Every in-flight run finished before the drain deadline. */
  drained: boolean;
  /** Journal rows still pending at exit: the next start settles them. */
  pending: number;
  /** The service removed this node from its user's nodes (410 node_removed): the daemon stopped by itself. */
  removed?: SvcError;
  /** An ephemeral node whose one run was over removed itself (`removed` says so too): what it withdrew. */
  retired?: Retired;
  /** A verified update is staged (auto-update.ts): the daemon stopped for the start that switches to it. */
  updateStaged?: string;
}

/**
 * Runs until `stop` aborts (its reason, when a string, is logged as the signal that stopped it), then lets in-flight
 * work finish (bounded) and records the stop.
 */
export async function runDaemon(deps: DaemonDeps, stop: AbortSignal): Promise<DaemonOutcome> {
  // Listening before the first line: an address in use stops the start with the reason, before anything runs.
  const endpoint =
    deps.healthAt === undefined
      ? undefined
      : await (await import('./health-server.js')).openHealthEndpoint(deps.healthAt, deps.tickMs ?? DEFAULT_TICK_MS, deps.clock);
  const log = new DaemonLog(
    deps.write,
    deps.clock,
    endpoint === undefined ? undefined : (event, fields) => endpoint.health.onLogEvent(event, fields),
  );
  if (endpoint !== undefined) log.info('health_listening', { addr: endpoint.address, paths: '/healthz,/metrics' });
  const onStop = (): void => log.info('signal', { signal: typeof stop.reason === 'string' ? stop.reason : undefined });
  if (stop.aborted) onStop();
  else stop.addEventListener('abort', onStop, { once: true });
  keepWasmOnBaselineCompiler();
  const stopCollecting = collectPeriodically();
  try {
    return await new NodeDaemon({ ...deps, ...(endpoint === undefined ? {} : { health: endpoint.health }) }, log).run(stop);
  } finally {
    stopCollecting();
    await endpoint?.close();
  }
}

class NodeDaemon {
  readonly #deps: DaemonDeps;
  readonly #core: DaemonCore;
  readonly #tickMs: number;
  readonly #drainMs: number;
  readonly #hold: ServiceHold;
  readonly #settlement: PendingSettlement;
  readonly #puller: WorkPuller;
  /**
   * Once the service is usable (ServiceHold.ready), unsettled rows are settled before anything is scheduled: at
   * start, and again after every hold.
   */
  #phase: 'settle' | 'schedule' = 'settle';
  /** Aborted, with the service's answer, when this node was removed from its user's nodes. */
  readonly #removal = new AbortController();
  readonly #updater: AutoUpdater | undefined;
  /** Aborted, with the staged version, when an update waits for the restart. */
  readonly #update = new AbortController();

  constructor(deps: DaemonDeps, log: DaemonLog) {
    this.#deps = deps;
    this.#tickMs = deps.tickMs ?? DEFAULT_TICK_MS;
    this.#drainMs = deps.drainMs ?? DEFAULT_DRAIN_MS;
    this.#core = new DaemonCore({ ...deps, log }, deps.backoffMs ?? DEFAULT_BACKOFF_MS);
    this.#hold = new ServiceHold(
      this.#core,
      (node) => loggingArtifacts(deps.callerFor(node), log),
      () => {
        this.#phase = 'settle';
        this.#core.wake();
      },
      (error) => this.#removal.abort(error),
    );
    this.#settlement = new PendingSettlement(this.#core, this.#hold);
    this.#puller = new WorkPuller(this.#core, this.#hold, this.#settlement, (caller) => this.#retire(caller));
    this.#updater =
      deps.autoUpdate === undefined
        ? undefined
        : new AutoUpdater(
            this.#core,
            deps.autoUpdate,
            () => this.#inFlight(),
            (version) => this.#update.abort(version),
          );
  }

  #retired: Retired | undefined;

  /** The service said this ephemeral node's one run is over: it removes itself, and the daemon stops (retirement.ts). */
  async #retire(caller: NodeCaller): Promise<boolean> {
    this.#retired ??= await retireNode(caller, this.#core.log);
    if (this.#retired !== undefined) this.#removal.abort(retiredError(this.#retired));
    return this.#retired !== undefined;
  }

  async run(stop: AbortSignal): Promise<DaemonOutcome> {
    const { db, pid, version, supervisor = 'none' } = this.#deps;
    const { log } = this.#core;
    const { previousPid } = claimDaemon(db, { pid, version, tickMs: this.#tickMs, supervisor }, this.#core.now());
    this.#core.journal.prepare();
    // The previous daemon is gone (claimDaemon checked): its runs in flight when it died are awaited by nobody.
    if (previousPid !== null) releaseRunsOf(db, previousPid);
    log.info('daemon_started', {
      pid,
      version,
      home: this.#deps.home,
      base_url: this.#deps.client.baseUrl,
      agents: listRegistrations(db).length,
      pending_runs: pendingRuns(db).length,
      concurrency: this.#core.concurrency,
      supervisor,
    });
    this.#updater?.start();
    let failing: string | undefined;
    const ended = AbortSignal.any([stop, this.#removal.signal, this.#update.signal]);
    while (!ended.aborted) {
      try {
        this.#tick();
        if (failing !== undefined) log.info('tick_recovered');
        failing = undefined;
      } catch (error) {
        // A busy or failing database must not end the daemon: the next tick tries again (logged once per failure).
        if (messageOf(error) !== failing) log.error('tick_failed', { error: messageOf(error) });
        failing = messageOf(error);
      }
      await this.#core.nextTick(this.#tickMs, ended);
    }
    const removed = this.#removal.signal.aborted ? (this.#removal.signal.reason as SvcError) : undefined;
    const updateStaged = this.#update.signal.aborted && !stop.aborted ? (this.#update.signal.reason as string) : undefined;
    return {
      ...(await this.#shutdown(removed !== undefined)),
      ...(removed === undefined ? {} : { removed }),
      ...(this.#retired === undefined ? {} : { retired: this.#retired }),
      ...(updateStaged === undefined ? {} : { updateStaged }),
    };
  }

  /**
   * No new work; runs in flight get the drain to finish. Agents still running then are stopped, and their runs
   * reported failed (refunded) within a short grace; what is left is settled at the next start.
   */
  async #shutdown(removed: boolean): Promise<DaemonOutcome> {
    const { db, log } = this.#core;
    this.#puller.stop();
    log.info('stopping', { in_flight_runs: this.#inFlight() });
    // A removed node's results are refused: its agents are stopped at once (the service refunds their runs).
    let drained = removed ? false : await this.#core.tasksSettle(this.#drainMs);
    if (!drained) {
      if (!removed || this.#inFlight() > 0)
        log.warn('stopping_agents', { in_flight_runs: this.#inFlight(), note: 'their runs end failed and are refunded' });
      this.#core.stopRuns();
      drained = await this.#core.tasksSettle(REPORT_GRACE_MS);
    }
    // Said last: the renewals of the runs drained above were polls, and each made the node online again.
    if (!removed) await sayOffline(this.#hold.caller(), this.#core.log);
    this.#core.finished = true;
    recordStopped(db, this.#core.now());
    const pending = pendingRuns(db).length;
    if (drained) log.info('daemon_stopped', { pending_runs: pending });
    else
      log.warn('daemon_stopped', {
        drained: false,
        in_flight_runs: this.#inFlight(),
        pending_runs: pending,
        note: 'pending runs are settled at the next start',
      });
    return { drained, pending };
  }

  #inFlight(): number {
    return this.#puller.running;
  }

  #tick(): void {
    const now = this.#core.now();
    // The tick's write is the journal's check too: it fails while the disk is full, and the first that works resumes.
    this.#core.record(() => recordTick(this.#core.db, now));
    this.#core.health?.tick(now, this.#core.busySlots);
    const caller = this.#hold.caller();
    this.#updater?.tick(this.#hold.ready && this.#phase === 'schedule' ? caller : undefined, now);
    if (this.#updater?.holdsWork) {
      // An update waits for the runs in flight: none is taken meanwhile (the open poll is given up, as at a stop).
      this.#puller.stop();
      return;
    }
    if (caller === undefined) return;

    if (!this.#hold.ready) {
      this.#hold.probeIfDue(caller, now);
      return;
    }
    if (this.#phase === 'settle') {
      if (!this.#settlement.busy && !this.#catchingUp) {
        this.#catchingUp = true;
        this.#core.track(
          this.#catchUp(caller).then((done) => {
            this.#catchingUp = false;
            if (done && this.#hold.ready && this.#phase === 'settle') {
              this.#phase = 'schedule';
              // Polling starts now, not a tick later: a node is back within seconds of the service.
              this.#core.wake();
            }
          }),
        );
      }
      return;
    }
    this.#settlement.retryIfDue(caller, now);
    this.#puller.tick(caller);
  }

  #catchingUp = false;
  #isolationSaid = false;

  /** The service follows this node's registrations, then what a crash or an outage left is settled. */
  async #catchUp(caller: NodeCaller): Promise<boolean> {
    const { log } = this.#core;
    try {
      const sync = await syncServedAgents(this.#core.db, caller.executor.api);
      const labels = this.#labels();
      // The file is the truth: a change the service could not be told when it was made reaches it now.
      if (labels !== undefined) await caller.executor.api.setLabels(labels);
      // How the runs are kept from the node (docs/operations.md "Agent isolation"): an operator reads it here first.
      log.info('agents_served', {
        agents: sync.served.join(','),
        ...(sync.withdrawn.length > 0 ? { withdrawn: sync.withdrawn.join(',') } : {}),
        ...(labels === undefined ? {} : { labels: labels.join(',') }),
        isolation: caller.executor.runner.isolation,
      });
      // What the runs are not held to here (status says the same): once per process, not at every catch-up.
      if (!this.#isolationSaid)
        for (const what of isolationReport(caller.executor.runner.isolation).cannot) log.warn('isolation_not_held', { what });
      this.#isolationSaid = true;
      if (!(await this.#moveSchedules(caller, sync.served))) return false;
    } catch (error) {
      if (!this.#hold.onServiceError(error, caller)) log.error('serve_sync_failed', { error: messageOf(error) });
      return false;
    }
    return this.#settlement.settle(caller);
  }

  /**
   * This daemon's own intervals become the service's schedules, pinned here (agents/schedule-move.ts). An outage is
   * waited out like any other (false: the catch-up is tried again); a refusal leaves them unmoved, said once a start.
   */
  async #moveSchedules(caller: NodeCaller, served: readonly string[]): Promise<boolean> {
    const { log } = this.#core;
    try {
      const move = await moveLocalSchedules(this.#core.db, caller.executor.api, served);
      if (move === undefined) return true;
      for (const { agent_id, schedule_id } of move.moved) log.info('schedule_moved', { agent: agent_id, schedule_id });
      for (const { agent_id, every_seconds } of move.left)
        log.warn('schedule_not_moved', {
          agent: agent_id,
          note: "this node's schedules were moved to the service before this one was registered: it does not run on its own",
          // register makes its schedule at the service, with the input stored with it; a minute apart at the most often.
          remedy: `swarm-node register ${agent_id} --every ${formatDuration(Math.max(every_seconds, 60))}`,
        });
      return true;
    } catch (error) {
      if (this.#hold.onServiceError(error, caller)) return false;
      if (!this.#moveRefusedSaid) log.error('schedules_not_moved', { error: messageOf(error) });
      this.#moveRefusedSaid = true;
      return true;
    }
  }

  #moveRefusedSaid = false;

  /** A config file whose labels cannot be read keeps the service's set as it was, and says so; runs go on. */
  #labels(): readonly string[] | undefined {
    try {
      return this.#deps.labels?.();
    } catch (error) {
      this.#core.log.error('labels_unreadable', { error: messageOf(error) });
      return undefined;
    }
  }
}

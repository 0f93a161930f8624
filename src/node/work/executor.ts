// A run this node holds, executed here exactly once (docs/api.md "Runs on the node"): the executions journal gets
// the run before the agent starts and its result before the report, the lease is renewed while the agent works,
// its log is shipped as it comes (./log-shipper.ts, docs/api.md "Run logs"), and the result is reported once. A run
// whose lease has passed by the time it would start (this process was frozen, its answer sat unread) is handed back
// unstarted; a result the service cannot take yet is tried again while the lease lasts (run-lease.ts). What a crash
// leaves is finished by recover(): a run found running is reported failed (interrupted), never started again; a
// finished one is reported with its stored result.
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError } from '../../contract/errors.js';
import type { RunResponse } from '../../contract/schemas.js';
import type { RunSecrets } from '../../contract/secrets.js';
import { CappedBackoff } from '../../lib/backoff.js';
import { monotonicClock, type Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { NodeApi } from '../service/node-api.js';
import { processIsAlive } from '../host/process-alive.js';
import type { ArtifactHandler, LocalOutcome, LocalRunner } from '../runner/run-local.js';
import { RUN_CANCELLED } from '../runner/agent-process.js';
import { LogShipper } from './log-shipper.js';
import { EventShipper } from './event-shipper.js';
import { secretsRedactor } from '../runner/agent-secrets.js';
import {
  executionClosed,
  executionFinished,
  executionStarted,
  findExecution,
  openExecutions,
  type Execution,
} from '../store/executions.js';
import { uploadArtifacts, type ArtifactReport } from './artifact-upload.js';
import { renewWhileRunning, type RunLease } from './run-lease.js';

/** A result the service could not take is tried again this soon, doubling up to the cap, while the lease lasts. */
const REPORT_RETRY_FIRST_MS = 500;
const REPORT_RETRY_CAP_MS = 4_000;

export interface LeasedRun {
  run_id: string;
  agent_id: string;
  user_id: string;
  input: unknown;
  lease_id: string;
  /** How long this node may hold it, on its monotonic clock (run-lease.ts): renewals keep it ahead. */
  lease: RunLease;
  /** The uploaded bundle the service pinned the run to; absent: the built-in agent. */
  bundle_digest?: string;
  /** Its time limit (docs/api.md "Runs as jobs"); absent: the agent's own. */
  timeout_seconds?: number;
  /** The secrets its agent declares (docs/api.md "Secrets"); held in memory only, never journaled. */
  secrets?: RunSecrets;
  /** Which attempt this is: 1 unless the service says otherwise. */
  attempt?: number;
}

export type ExecutionOutcome =
  /** The service has the result: the run as it ended. */
  | { kind: 'reported'; run: RunResponse; outcome: LocalOutcome }
  /** The lease ran out before the report (the run was failed and refunded): the result is dropped. */
  | { kind: 'lost' }
  /** The result is kept here; the service could not be told yet (recover() tells it later). */
  | { kind: 'unreported'; error: SvcError }
  /** This node knew the run already (another process runs it, or ran it): not run again. */
  | { kind: 'known' }
  /** The journal could not take the run (a full disk): its agent did not start, and it was handed back (not_started). */
  | { kind: 'not_journaled'; error: unknown };

/** A result to report: the journal's, or the run's as this process holds it when the journal could not take it. */
interface RunResult {
  run_id: string;
  lease_id: string;
  outcome: LocalOutcome;
}

function resultOf(execution: Execution): RunResult {
  const outcome = { status: execution.result_status!, output: JSON.parse(execution.output_json ?? 'null') as unknown } as LocalOutcome;
  return { run_id: execution.run_id, lease_id: execution.lease_id, outcome };
}

export interface ExecutorDeps {
  db: SqliteDatabase;
  api: NodeApi;
  runner: LocalRunner;
  clock: Clock;
  pid: number;
  version: string;
  /** The node's tier: an agent's own business (the tutor's sections). */
  tier: string;
  /** What leases are measured with (run-lease.ts): the host's monotonic clock unless a test gives another. */
  monotonic?: Clock;
}

/** Failures that say nothing about the result: the service could not be reached or was not ready to take it. */
function isTransient(error: SvcError): boolean {
  return error.code === 'service_unreachable' || error.code === 'service_unavailable' || error.status >= 500;
}

/**
 * The longest the end of a run's log may hold its result: a service that does not answer gets the result anyway
 * (kept here and reported later if need be), the log's end is then lost.
 */
export const LOG_FLUSH_BOUND_MS = 10_000;

export class Executor {
  readonly #deps: ExecutorDeps;
  readonly #monotonic: Clock;
  /** Runs whose result this process is reporting now: recover() leaves them to it. */
  readonly #reporting = new Set<string>();
  #artifactsListener: ((run: LeasedRun, report: ArtifactReport) => void) | undefined;

  constructor(deps: ExecutorDeps) {
    this.#deps = deps;
    this.#monotonic = deps.monotonic ?? monotonicClock;
  }

  get runner(): LocalRunner {
    return this.#deps.runner;
  }

  get api(): NodeApi {
    return this.#deps.api;
  }

  /**
   * Runs `run` here unless this node knows it already; `signal` stops the agent (the node stops). A result the
   * service cannot take yet is tried again while the lease lasts, until `retryUntil` aborts (the daemon's drain is
   * over): then it is kept for the next settlement.
   */
  async execute(run: LeasedRun, signal?: AbortSignal, retryUntil?: AbortSignal): Promise<ExecutionOutcome> {
    const { db, clock, pid } = this.#deps;
    let first: boolean;
    try {
      first = executionStarted(db, { ...run, owner_pid: pid }, clock.now());
    } catch (error) {
      // Not journaled, not run: exactly once holds only for a run the journal has. Handed back, it runs elsewhere.
      const why = notStarted(`the node could not journal the run (${error instanceof Error ? error.message : String(error)})`);
      await this.#report({ run_id: run.run_id, lease_id: run.lease_id, outcome: why });
      return { kind: 'not_journaled', error };
    }
    if (!first) {
      const known = findExecution(db, run.run_id)!;
      return known.owner_pid !== null && known.owner_pid !== pid && processIsAlive(known.owner_pid)
        ? { kind: 'known' }
        : this.#finishKnown(known);
    }
    if (run.lease.passed) {
      // The service may have failed and refunded the run already (node_lost): its agent must not start. Handed back
      // unstarted, it goes back to the queue if the service still has it (docs/api.md "Leases as durations").
      const handedBack = notStarted(
        'the lease had run out before the node could start the agent (the node was frozen or its answer came late)',
      );
      this.#keep(() => executionFinished(db, run.run_id, handedBack, clock.now()));
      return this.#report({ run_id: run.run_id, lease_id: run.lease_id, outcome: handedBack });
    }
    const stopped = new AbortController();
    // The reason goes with it: a cancel (RUN_CANCELLED) ends the run cancelled, a node stopping ends it aborted.
    const stopAgent = (): void => stopped.abort(signal?.reason);
    signal?.addEventListener('abort', stopAgent, { once: true });
    const renewing = renewWhileRunning(this.#deps.api, this.#deps.version, run, stopped, this.#monotonic);
    // The service's answer to a batch of the log says when the run's user cancelled it: the agent is stopped so.
    const log = new LogShipper({
      leaseId: run.lease_id,
      send: (batch, giveUp) => this.#deps.api.postLogs(run.run_id, batch, giveUp),
      clock,
      // Every form of the run's secret values is hidden before a line leaves the node (docs/api.md "Secrets").
      redact: secretsRedactor(run.secrets),
      onCancel: () => stopped.abort(RUN_CANCELLED),
    });
    // The events it emits on its kit channel go beside the log, redacted alike (docs/api.md "Run events").
    const events = new EventShipper({
      leaseId: run.lease_id,
      attempt: run.attempt ?? 1,
      send: (batch, giveUp) => this.#deps.api.postRunEvents(run.run_id, batch, giveUp),
      clock,
      redact: secretsRedactor(run.secrets),
    });
    let outcome: LocalOutcome;
    try {
      try {
        const onOutput = (stream: 'stdout' | 'stderr', chunk: Buffer): void => log.write(stream, chunk);
        const onArtifacts: ArtifactHandler = async (source, ended) => {
          // Only a run that ended by itself (not cancelled, its lease lost, the node stopping) uploads what it left,
          // its result journaled first: a crash mid-upload still reports it (docs/api.md "Run artifacts").
          if (stopped.signal.aborted) return;
          this.#keep(() => executionFinished(db, run.run_id, ended, clock.now()));
          const report = await uploadArtifacts(this.#deps.api, run, source, stopped.signal, secretsRedactor(run.secrets));
          this.#artifactsListener?.(run, report);
        };
        outcome = await this.#deps.runner.run({ ...run, tier: this.#deps.tier }, stopped.signal, onOutput, onArtifacts, (event) =>
          events.emit(event),
        );
      } finally {
        signal?.removeEventListener('abort', stopAgent);
      }
      // A journal that cannot take the result (a full disk) leaves it in memory: it is reported all the same.
      if (!renewing.lost) this.#keep(() => executionFinished(db, run.run_id, outcome, clock.now()));
      // The log's end reaches the service before the result (docs/api.md "Run logs"), the lease renewed meanwhile.
      // Its events too, within the same bound, at once with the log's end.
      await Promise.all([log.close(renewing.lost ? 0 : LOG_FLUSH_BOUND_MS), events.close(renewing.lost ? 0 : LOG_FLUSH_BOUND_MS)]);
    } finally {
      renewing.stop();
    }
    if (renewing.lost) {
      this.#keep(() => executionClosed(db, run.run_id, 'lost', clock.now()));
      return { kind: 'lost' };
    }
    // The journal's result when it has one (the first kept: the agent's own end), else the one held here.
    const kept = this.#read(() => findExecution(db, run.run_id));
    const result = kept?.status === 'finished' ? resultOf(kept) : { run_id: run.run_id, lease_id: run.lease_id, outcome };
    return this.#reportWithinLease(result, run.lease, retryUntil);
  }

  #read<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch {
      return undefined;
    }
  }

  /** A write of the journal that must not lose a result: false when it failed (the daemon's tick notes why). */
  #keep(write: () => void): boolean {
    try {
      write();
      return true;
    } catch {
      return false;
    }
  }

  /** Reports, and while the service cannot take it and the lease lasts, tries again on a short capped backoff. */
  async #reportWithinLease(result: RunResult, lease: RunLease, retryUntil: AbortSignal | undefined): Promise<ExecutionOutcome> {
    const backoff = new CappedBackoff(REPORT_RETRY_FIRST_MS, REPORT_RETRY_CAP_MS);
    this.#reporting.add(result.run_id);
    try {
      for (;;) {
        const outcome = await this.#report(result);
        if (outcome.kind !== 'unreported' || !isTransient(outcome.error) || retryUntil?.aborted === true) return outcome;
        const waitMs = Math.min(backoff.next(), lease.leftMs);
        if (waitMs <= 0) return outcome;
        await sleep(waitMs, undefined, retryUntil === undefined ? {} : { signal: retryUntil }).catch(() => undefined);
      }
    } finally {
      this.#reporting.delete(result.run_id);
    }
  }

  /** Told what became of each run's artifacts (the daemon logs it, `run` says it). */
  onArtifacts(listener: (run: LeasedRun, report: ArtifactReport) => void): void {
    this.#artifactsListener = listener;
  }

  /** What a crash or an outage left: runs of processes gone, and results not reported yet (this process's too). */
  async recover(): Promise<{ reported: number; lost: number; left: number }> {
    const counts = { reported: 0, lost: 0, left: 0 };
    for (const execution of openExecutions(this.#deps.db)) {
      const own = execution.owner_pid === this.#deps.pid;
      // A run still executing (here, or in another live process) is reported by whoever runs it.
      if (execution.status === 'running' && (own || (execution.owner_pid !== null && processIsAlive(execution.owner_pid)))) continue;
      if (this.#reporting.has(execution.run_id)) continue;
      if (!own && execution.status === 'finished' && execution.owner_pid !== null && processIsAlive(execution.owner_pid)) continue;
      const outcome = await this.#finishKnown(execution);
      if (outcome.kind === 'reported') counts.reported += 1;
      else if (outcome.kind === 'lost') counts.lost += 1;
      else counts.left += 1;
    }
    await this.#deps.runner.removeLeftovers((runId) => {
      const execution = findExecution(this.#deps.db, runId);
      return execution?.status === 'running' && execution.owner_pid !== null && processIsAlive(execution.owner_pid);
    });
    return counts;
  }

  async #finishKnown(execution: Execution): Promise<ExecutionOutcome> {
    if (execution.status === 'reported' || execution.status === 'lost') return { kind: 'known' };
    if (execution.status === 'running') {
      // Its process died with the agent: never started twice; the service refunds it at once instead of at lease end.
      const interrupted: LocalOutcome = {
        status: 'failed',
        output: { error: 'interrupted', message: 'the node stopped while the agent ran; the run was not run again' },
      };
      executionFinished(this.#deps.db, execution.run_id, interrupted, this.#deps.clock.now());
    }
    return this.#report(resultOf(findExecution(this.#deps.db, execution.run_id)!));
  }

  async #report(result: RunResult): Promise<ExecutionOutcome> {
    const { run_id: runId, outcome } = result;
    try {
      const run = await this.#deps.api.report(runId, { lease_id: result.lease_id, ...outcome });
      this.#keep(() => executionClosed(this.#deps.db, runId, 'reported', this.#deps.clock.now()));
      return { kind: 'reported', run, outcome };
    } catch (error) {
      if (error instanceof SvcError && (error.code === 'lease_lost' || error.code === 'run_not_found')) {
        this.#keep(() => executionClosed(this.#deps.db, runId, 'lost', this.#deps.clock.now()));
        return { kind: 'lost' };
      }
      return { kind: 'unreported', error: error instanceof SvcError ? error : new SvcError('failed', String(error)) };
    }
  }
}

/** A run handed back without its agent started (docs/api.md "Leases as durations"): the service queues it again. */
function notStarted(why: string): LocalOutcome {
  return { status: 'failed', output: { error: 'not_started', message: `${why}; the agent did not run` } };
}

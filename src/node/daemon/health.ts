// What the daemon's health endpoint reports (docs/operations.md "The daemon's health endpoint": a supervisor or a
// load balancer asks the node itself, as Buildkite's agent and GitLab Runner answer): the loop's last tick, the last
// poll the service answered, and Prometheus figures of runs by outcome, cents charged and poll latency. Fed by the
// daemon as it goes (`tick`, `pollAnswered`) and by its log's run events, so every run the daemon logs is counted
// once, however it ended.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JournalFault } from '../store/journal-fault.js';
import type { LogFields } from './log.js';

/** Run events of the daemon's log and the outcome each counts as. */
const RUN_OUTCOMES: Record<string, string> = {
  run_succeeded: 'succeeded',
  run_failed: 'failed',
  run_lost: 'lost',
  run_refused: 'refused',
  run_unreported: 'unreported',
  run_error: 'error',
  run_handed_back: 'handed_back',
};

export interface HealthReport {
  healthy: boolean;
  /** Why it is not (empty when healthy). */
  problems: string[];
  last_tick_at: string | null;
  last_poll_at: string | null;
  runs_in_flight: number;
  /** False while the journal cannot be written (a full disk): the node takes no run then. */
  journal_writable: boolean;
}

export class DaemonHealth {
  readonly registry = new Registry();
  readonly #runs: Counter;
  readonly #charged: Counter;
  readonly #pollSeconds: Histogram;
  readonly #running: Gauge;
  #lastTickAt: number | undefined;
  #lastPollAt: number | undefined;
  #inFlight = 0;
  #journalFault: JournalFault | undefined;

  constructor(readonly options: { tickMs: number; now: () => number }) {
    const registers = [this.registry];
    this.#runs = new Counter({
      name: 'swarm_node_runs_total',
      help: 'Runs this node finished, by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    this.#charged = new Counter({
      name: 'swarm_node_charged_cents_total',
      help: 'Cents charged for runs this node ran successfully.',
      registers,
    });
    this.#pollSeconds = new Histogram({
      name: 'swarm_node_poll_duration_seconds',
      help: 'Time the service took to answer a poll for work (a long poll is held open up to 20 s).',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 20, 30],
      registers,
    });
    this.#running = new Gauge({
      name: 'swarm_node_runs_in_flight',
      help: 'Runs executing on this node now.',
      registers,
      collect: () => this.#running.set(this.#inFlight),
    });
    const lastPoll: Gauge = new Gauge({
      name: 'swarm_node_last_poll_success_timestamp_seconds',
      help: 'When the service last answered a poll (Unix time); 0 before the first.',
      registers,
      collect: () => lastPoll.set((this.#lastPollAt ?? 0) / 1000),
    });
    for (const outcome of Object.values(RUN_OUTCOMES)) this.#runs.inc({ outcome }, 0);
  }

  tick(at: number, inFlight: number): void {
    this.#lastTickAt = at;
    this.#inFlight = inFlight;
  }

  /** The journal cannot be written (a full disk): unhealthy until it can, the reason said. */
  journalFault(fault: JournalFault | undefined): void {
    this.#journalFault = fault;
  }

  pollAnswered(at: number, seconds: number): void {
    this.#lastPollAt = at;
    this.#pollSeconds.observe(seconds);
  }

  /** A line of the daemon's log: a run event counts its outcome (and a success its charge). */
  onLogEvent(event: string, fields: LogFields): void {
    const outcome = RUN_OUTCOMES[event];
    if (outcome === undefined) return;
    this.#runs.inc({ outcome });
    if (outcome === 'succeeded' && typeof fields.charged_cents === 'number') this.#charged.inc(fields.charged_cents);
  }

  /**
   * Healthy when the loop ticked within a few ticks (a hung event loop shows here) and, once the service has answered
   * a poll, when one was answered within two long polls and a heartbeat: a node that stopped reaching the service
   * is one a balancer should not count on.
   */
  report(): HealthReport {
    const now = this.options.now();
    const problems: string[] = [];
    const tickBound = Math.max(5_000, 5 * this.options.tickMs);
    if (this.#lastTickAt === undefined) problems.push('the daemon loop has not ticked yet');
    else if (now - this.#lastTickAt > tickBound)
      problems.push(`the daemon loop last ticked ${Math.round((now - this.#lastTickAt) / 1000)} s ago`);
    if (this.#lastPollAt !== undefined && now - this.#lastPollAt > POLL_BOUND_MS) {
      problems.push(`the service last answered a poll ${Math.round((now - this.#lastPollAt) / 1000)} s ago`);
    }
    const fault = this.#journalFault;
    if (fault !== undefined)
      problems.push(`the journal cannot be written since ${fault.since} (${fault.reason}: ${fault.error}): no run is taken until it can`);
    return {
      healthy: problems.length === 0,
      problems,
      last_tick_at: this.#lastTickAt === undefined ? null : new Date(this.#lastTickAt).toISOString(),
      last_poll_at: this.#lastPollAt === undefined ? null : new Date(this.#lastPollAt).toISOString(),
      runs_in_flight: this.#inFlight,
      journal_writable: fault === undefined,
    };
  }
}

/** Two long polls (20 s each) and a heartbeat (15 s): a live node answers well within it. */
export const POLL_BOUND_MS = 60_000;

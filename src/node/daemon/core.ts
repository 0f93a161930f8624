// What every part of the daemon shares (daemon.ts builds it): its dependencies, the clock, the background tasks a
// stop waits for, and whether the stop is done.
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ServiceClient } from '../service/service-client.js';
import type { DaemonHealth } from './health.js';
import { JournalHealth } from './journal-health.js';
import type { DaemonLog } from './log.js';

export interface CoreDeps {
  db: SqliteDatabase;
  client: ServiceClient;
  clock: Clock;
  log: DaemonLog;
  credentialsFile: string;
  pid: number;
  version: string;
  /** Its name among several nodes on the host; undefined for the default node. */
  name?: string | undefined;
  /** Runs executed here at once: scheduled ones and those pulled from the service share the slots. */
  concurrency: number;
  /** What the health endpoint reports, when it is on (daemon --health-addr). */
  health?: DaemonHealth;
  /** The node's var/: where the journal's fault is kept for `status` when the journal cannot be written. */
  varDir?: string;
}

export class DaemonCore {
  readonly db: SqliteDatabase;
  readonly client: ServiceClient;
  readonly clock: Clock;
  readonly log: DaemonLog;
  readonly credentialsFile: string;
  readonly pid: number;
  readonly version: string;
  readonly name: string | undefined;
  /** First wait of the slow re-checks (timing.ts). */
  readonly backoffMs: number;
  /** Every background promise (runs, checks, settlements), so a stop can wait for them. */
  readonly tasks = new Set<Promise<void>>();
  /** The stop is done; a run still answering now is left to the next start. */
  finished = false;
  readonly concurrency: number;
  readonly health: DaemonHealth | undefined;
  /** Whether the journal can be written: no work is taken while it cannot (journal-health.ts). */
  readonly journal: JournalHealth;
  #busySlots = 0;
  readonly #slotWaiters = new Set<() => void>();
  /** Aborted when the node takes back the slots it offered (its journal cannot be written), then replaced. */
  #offerWithdrawn = new AbortController();
  /** Ends the daemon's wait for its next tick (nextTick). */
  #wake: (() => void) | undefined;
  readonly #runs = new AbortController();

  constructor(deps: CoreDeps, backoffMs: number) {
    this.db = deps.db;
    this.client = deps.client;
    this.clock = deps.clock;
    this.log = deps.log;
    this.credentialsFile = deps.credentialsFile;
    this.pid = deps.pid;
    this.version = deps.version;
    this.name = deps.name;
    this.backoffMs = backoffMs;
    this.concurrency = deps.concurrency;
    this.health = deps.health;
    this.journal = new JournalHealth({
      log: deps.log,
      clock: deps.clock,
      pid: deps.pid,
      varDir: deps.varDir,
      onChanged: (fault) => {
        this.health?.journalFault(fault);
        if (fault !== undefined) {
          // A poll held open with slots to fill is given up: it would be handed runs the journal cannot take.
          this.#offerWithdrawn.abort();
          this.#offerWithdrawn = new AbortController();
        }
        // Writable again: the pull loop waiting with no slot to offer, and the tick, go on at once.
        if (fault === undefined) this.#wakeSlotWaiters();
      },
    });
  }

  /** Runs executing here now, scheduled and pulled. */
  get busySlots(): number {
    return this.#busySlots;
  }

  /** Aborted when the drain is over: agents still running here are stopped (their runs end failed, refunded). */
  get runsSignal(): AbortSignal {
    return this.#runs.signal;
  }

  stopRuns(): void {
    this.#runs.abort();
  }

  /** Aborted when the slots offered in a poll are taken back (freeSlots fell to none for want of a journal). */
  get offerWithdrawn(): AbortSignal {
    return this.#offerWithdrawn.signal;
  }

  /** None while the journal cannot be written: a run taken then could not be journaled before its agent starts. */
  freeSlots(): number {
    if (!this.journal.writable) return 0;
    return Math.max(0, this.concurrency - this.#busySlots);
  }

  /** A write of the journal that must not stop its caller: a failure that is the journal's is noted and swallowed. */
  record(write: () => void): void {
    try {
      write();
      this.journal.wrote();
    } catch (error) {
      if (!this.journal.failed(error)) throw error;
    }
  }

  takeSlot(): void {
    this.#busySlots += 1;
  }

  releaseSlot(): void {
    this.#busySlots -= 1;
    this.#wakeSlotWaiters();
  }

  #wakeSlotWaiters(): void {
    for (const wake of this.#slotWaiters) wake();
    this.wake();
  }

  /** Resolves when a slot is released, after `ms` at the latest, or when `signal` aborts. */
  async slotFreed(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let wake = (): void => undefined;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, Math.max(0, ms));
      this.#slotWaiters.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
    clearTimeout(timer);
    this.#slotWaiters.delete(wake);
    signal.removeEventListener('abort', wake);
  }

  now(): number {
    return this.clock.now();
  }

  /** Waits `ms` for the next tick, less when something the daemon waits for happened meanwhile (wake). */
  async nextTick(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let timer: NodeJS.Timeout | undefined;
    let ended = (): void => undefined;
    await new Promise<void>((resolve) => {
      ended = resolve;
      this.#wake = resolve;
      timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', ended, { once: true });
    });
    clearTimeout(timer);
    // The daemon's signal lives as long as the daemon: a listener left on it each tick is a closure kept a second.
    signal.removeEventListener('abort', ended);
    this.#wake = undefined;
  }

  /** A tick now rather than at its time: the service is back, a catch-up is done, a probe is due. */
  wake(): void {
    this.#wake?.();
  }

  /** A tick at `at` (this clock), not up to a tick later. */
  wakeAt(at: number): void {
    setTimeout(() => this.wake(), Math.max(0, at - this.now())).unref();
  }

  /** True when every background task settled within `ms` (a stop's drain), false when time ran out first. */
  async tasksSettle(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const settled = await Promise.race([
      Promise.allSettled([...this.tasks]).then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
    clearTimeout(timer);
    return settled;
  }

  /** Runs `task` in the background: a tick never waits for the network. */
  track(task: Promise<void>): void {
    this.tasks.add(task);
    void task.finally(() => this.tasks.delete(task));
  }
}

/** The first sentence: a one-line log needs no remedy appended after it. */
export function firstSentence(message: string): string {
  return message.split('; ')[0] ?? message;
}

export function isoOrUndefined(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

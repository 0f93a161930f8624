// Settling the journal's unsettled rows (docs/api.md "Settling a pending run"): each is replayed with its own
// Idempotency-Key, so the service answers with the first response and nothing is charged twice. It runs before
// anything is scheduled (at start and after a hold), and again on a backoff while rows are left that cannot be
// settled yet.
import type { NodeCaller } from '../work/caller.js';
import { settlePendingRuns, type RunDeps } from '../runs/run-agent.js';
import { pendingRuns, releaseAbandonedRuns, settledAmong, type SettledRun } from '../store/journal.js';
import { messageOf } from '../../contract/errors.js';
import type { DaemonCore } from './core.js';
import type { ServiceHold } from './service-hold.js';
import { nextBackoff } from './timing.js';

/**
 * Settlements run as "pid 0", which owns no row: every row of a live process is left alone — this daemon's own
 * runs in flight included — and only the rows nobody awaits are replayed: their writer is gone, or released them.
 */
const NO_PROCESS = 0;

/** Past the longest client deadline (timeout_seconds ≤ 600) with a margin: nobody still waits for such a row. */
const ABANDONED_AFTER_MS = 15 * 60_000;

export class PendingSettlement {
  readonly #core: DaemonCore;
  readonly #hold: ServiceHold;
  #settling = false;
  #retryAt: number | undefined;
  #backoff: number | undefined;

  constructor(core: DaemonCore, hold: ServiceHold) {
    this.#core = core;
    this.#hold = hold;
  }

  get busy(): boolean {
    return this.#settling;
  }

  /** When the next settlement is planned, if one is. */
  get retryAt(): number | undefined {
    return this.#retryAt;
  }

  /** A run waits for a settlement: one is planned a backoff from now, unless one is planned already. */
  planRetry(now: number): void {
    this.#retryAt ??= now + this.#core.backoffMs;
  }

  retryIfDue(caller: NodeCaller, now: number): void {
    if (this.#retryAt !== undefined && now >= this.#retryAt && !this.#settling) this.#core.track(this.settle(caller).then(() => undefined));
  }

  /**
   * Reports what a crash left of the runs executed here (a result kept, a run cut short: never run again), then
   * replays unsettled journal rows with their own keys; true when it got through (rows may be left for a retry).
   */
  async settle(caller: NodeCaller): Promise<boolean> {
    const core = this.#core;
    this.#settling = true;
    try {
      const deps: RunDeps = { db: core.db, client: core.client, clock: core.clock, caller, source: 'daemon', pid: NO_PROCESS };
      releaseAbandonedRuns(core.db, core.now() - ABANDONED_AFTER_MS);
      // This daemon's own runs in flight are settled by their own call, not here.
      const keys = pendingRuns(core.db)
        .filter((run) => run.owner_pid !== core.pid)
        .map((run) => run.idempotency_key);
      const summary = await settlePendingRuns(deps);
      // One line per run first, then the summary: whoever reads the summary has read every run it counts.
      this.#afterSettlement(settledAmong(core.db, keys));
      if (summary.reported + summary.lost + summary.settled + summary.expired + summary.left > 0)
        core.log.info('pending_runs_settled', { ...summary });
      if (summary.left > 0) {
        this.#backoff = nextBackoff(this.#backoff, core.backoffMs);
        this.#retryAt = core.now() + this.#backoff;
      } else {
        this.#backoff = undefined;
        this.#retryAt = undefined;
      }
      return true;
    } catch (error) {
      if (!this.#hold.onServiceError(error, caller)) core.log.error('settle_failed', { error: messageOf(error) });
      return false;
    } finally {
      this.#settling = false;
    }
  }

  /** One line per settled run. */
  #afterSettlement(runs: SettledRun[]): void {
    for (const run of runs) {
      this.#core.log.info('run_settled', {
        agent: run.agent_id,
        status: run.status,
        run_id: run.run_id,
        charged_cents: run.charged_cents,
        error_code: run.error_code,
        key: run.idempotency_key,
      });
    }
  }
}

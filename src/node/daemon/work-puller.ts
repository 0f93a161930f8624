// Runs the service hands this node (docs/api.md "Runs on the node"), pulled the way GitHub's and GitLab's runners
// pull jobs: one long poll at a time asks for as many runs as there are free slots, and is the node's heartbeat too
// (the service shows a node offline when it has not polled for a lease time). Each run it gets is executed here by
// the executor (exactly once, its lease renewed while the agent works, its result reported once).
//
// With every slot busy the node still polls, every HEARTBEAT_MS, asking for nothing and never held open; a slot
// freed ends that wait at once. A failed poll waits a backoff (an outage or a refused credential is a hold of the
// daemon, service-hold.ts, and ends the pulling until a probe finds the service usable again).
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError, messageOf } from '../../contract/errors.js';
import type { AssignedRun } from '../../contract/node-protocol.js';
import { CappedBackoff } from '../../lib/backoff.js';
import { monotonicClock } from '../../lib/clock.js';
import { RUN_CANCELLED } from '../runner/agent-process.js';
import type { NodeCaller } from '../work/caller.js';
import { RunLease } from '../work/run-lease.js';
import { linkedSignal } from '../../lib/linked-signal.js';
import type { DaemonCore } from './core.js';
import type { ServiceHold } from './service-hold.js';
import type { PendingSettlement } from './settlement.js';
import { HostHealth } from './host-health.js';
import { recordDrained } from '../store/daemon-state.js';

/** The longest the service holds a poll open waiting for work (it may hold less). */
const POLL_HOLD_SECONDS = 20;
/** How often a node with every slot busy still says it is alive: well inside the service's offline bound. */
const HEARTBEAT_MS = 15_000;
/** Waits after a failed poll that is not a hold (a 4xx, a malformed answer): doubling to the cap, reset by an answer. */
const POLL_RETRY_FIRST_MS = 2_000;
const POLL_RETRY_CAP_MS = 30_000;

export class WorkPuller {
  readonly #core: DaemonCore;
  readonly #hold: ServiceHold;
  readonly #settlement: PendingSettlement;
  /** Runs pulled from the service and executing here, by run_id: a `lost` answer stops one. */
  readonly #running = new Map<string, AbortController>();
  readonly #stopped = new AbortController();
  #pulling: Promise<void> | undefined;
  readonly #retry = new CappedBackoff(POLL_RETRY_FIRST_MS, POLL_RETRY_CAP_MS);
  /** The service's last word on this node's drain. */
  #drained = false;
  /** What each poll says of the host (host-health.ts). */
  readonly #health: HostHealth;

  /** The service said this ephemeral node's one run is over (poll `retire`): true once the node removed itself. */
  readonly #retire: ((caller: NodeCaller) => Promise<boolean>) | undefined;

  constructor(core: DaemonCore, hold: ServiceHold, settlement: PendingSettlement, retire?: (caller: NodeCaller) => Promise<boolean>) {
    this.#core = core;
    this.#hold = hold;
    this.#settlement = settlement;
    this.#retire = retire;
    // The filesystem of the node's home: its etc/credentials.json's grandparent.
    this.#health = new HostHealth(dirname(dirname(core.credentialsFile)), () => core.now());
  }

  /** Pulled runs executing here now. */
  get running(): number {
    return this.#running.size;
  }

  /** Keeps one pull loop going while the service is usable (a tick calls it; it returns at once). */
  tick(caller: NodeCaller): void {
    if (this.#pulling !== undefined || this.#stopped.signal.aborted) return;
    const pulling = this.#pull(caller).finally(() => {
      this.#pulling = undefined;
    });
    this.#pulling = pulling;
    this.#core.track(pulling);
  }

  /** No more polls (the one open is given up); runs already here go on until the daemon stops them. */
  stop(): void {
    this.#stopped.abort();
  }

  async #pull(caller: NodeCaller): Promise<void> {
    const stop = this.#stopped.signal;
    let lastPollAt = 0;
    while (!stop.aborted && this.#hold.ready && this.#hold.current === caller) {
      const capacity = this.#core.freeSlots();
      if (capacity === 0 && this.#core.now() - lastPollAt < HEARTBEAT_MS) {
        await this.#core.slotFreed(HEARTBEAT_MS - (this.#core.now() - lastPollAt), stop);
        continue;
      }
      lastPollAt = this.#core.now();
      const withdrawn = this.#core.offerWithdrawn;
      // Linked, not AbortSignal.any: `stop` lives as long as the daemon and would keep an entry per poll.
      const linked = capacity === 0 ? undefined : linkedSignal([stop, withdrawn]);
      try {
        const health = await this.#health.current();
        // Leases are counted from here (run-lease.ts): the poll left before the service took any run for it.
        const asked = monotonicClock.now();
        const answer = await caller.executor.api.poll(
          {
            hostname: hostname(),
            ...(this.#core.name === undefined ? {} : { name: this.#core.name }),
            version: this.#core.version,
            capacity,
            running: [...this.#running.keys()],
            wait_seconds: capacity === 0 ? 0 : POLL_HOLD_SECONDS,
            ...(health === undefined ? {} : { health }),
          },
          linked?.signal ?? stop,
        );
        this.#retry.reset();
        this.#core.health?.pollAnswered(this.#core.now(), (monotonicClock.now() - asked) / 1000);
        // An answer that only asks to cancel says nothing of the drain (dispatch.ts answers it before looking).
        if (answer.cancel === undefined || answer.drained === true) this.#noteDrained(answer.drained === true);
        for (const runId of answer.lost) this.#running.get(runId)?.abort();
        for (const runId of answer.cancel ?? []) this.#running.get(runId)?.abort(RUN_CANCELLED);
        // An older service gives no seconds per run: the poll's lease length, from the same start, is never later.
        for (const run of answer.runs)
          this.#start(run, new RunLease(monotonicClock, asked, run.lease_seconds ?? answer.lease_seconds), caller);
        // Polling on after a failed removal: the service says it again at the next poll.
        if (answer.retire === true && this.#retire !== undefined && (await this.#retire(caller))) return;
      } catch (error) {
        if (stop.aborted) return;
        // The slots it offered were taken back (the journal cannot be written): ask again, for none.
        if (withdrawn.aborted) continue;
        // A service older than this daemon: the same poll again at once, without what it does not know.
        if (this.#health.refused(error)) {
          this.#core.log.warn('health_not_taken', {
            error: messageOf(error),
            note: 'the service is older; polling without health for an hour',
          });
          continue;
        }
        if (this.#hold.onServiceError(error, caller)) return;
        const retryMs = this.#retry.next();
        this.#core.log.warn('poll_failed', { error: messageOf(error), retry_in_seconds: Math.round(retryMs / 1000) });
        await sleep(retryMs, undefined, { signal: stop }).catch(() => undefined);
      } finally {
        linked?.release();
      }
    }
  }

  /** Recorded for `status` when the service's word changes (docs/api.md "Draining a node"), and logged. */
  #noteDrained(drained: boolean): void {
    if (drained === this.#drained) return;
    this.#drained = drained;
    try {
      recordDrained(this.#core.db, drained, this.#core.now());
    } catch {
      // Only status reads it: a journal that cannot be written is the journal's own fault, seen where it is kept.
    }
    this.#core.log.info(drained ? 'node_drained' : 'node_resumed', {
      note: drained ? 'its user drained this node: it takes no new run until resumed' : 'it takes runs again',
    });
  }

  /** Executes one pulled run in a slot of its own (a run the poll hands over is this node's to finish). */
  #start(run: AssignedRun, lease: RunLease, caller: NodeCaller): void {
    const core = this.#core;
    const agentStop = new AbortController();
    const stopAgent = (): void => agentStop.abort();
    core.runsSignal.addEventListener('abort', stopAgent, { once: true });
    this.#running.set(run.run_id, agentStop);
    core.takeSlot();
    core.log.info('run_pulled', { agent: run.agent_id, run_id: run.run_id });
    const started = core.now();
    const task = caller.executor
      .execute({ ...run, lease }, agentStop.signal, core.runsSignal)
      .then((executed) => {
        const fields = { agent: run.agent_id, run_id: run.run_id, seconds: Math.round((core.now() - started) / 100) / 10 };
        if (executed.kind === 'reported') {
          const level = executed.run.status === 'succeeded' ? 'info' : 'warn';
          core.log[level](`run_${executed.run.status === 'succeeded' ? 'succeeded' : 'failed'}`, {
            ...fields,
            charged_cents: executed.run.charged_cents,
            source: 'service',
          });
        } else if (executed.kind === 'lost')
          core.log.warn('run_lost', { ...fields, note: 'the lease ran out before the result; the service refunded the run' });
        else if (executed.kind === 'not_journaled') {
          core.journal.failed(executed.error);
          core.log.warn('run_handed_back', {
            ...fields,
            error: messageOf(executed.error),
            note: 'the journal could not take the run; its agent did not start and the service queues it again',
          });
        } else if (executed.kind === 'unreported') {
          core.log.warn('run_unreported', {
            ...fields,
            error: executed.error.message,
            note: 'the result is kept and reported at the next settlement',
          });
          if (!this.#hold.onServiceError(executed.error, caller)) this.#settlement.planRetry(core.now());
        }
      })
      .catch((error: unknown) => {
        core.log.error('run_error', {
          agent: run.agent_id,
          run_id: run.run_id,
          error: messageOf(error),
          code: error instanceof SvcError ? error.code : undefined,
        });
      })
      .finally(() => {
        core.runsSignal.removeEventListener('abort', stopAgent);
        this.#running.delete(run.run_id);
        core.releaseSlot();
      });
    core.track(task);
  }
}

// A run's lease as this node reckons it (docs/api.md "Leases as durations"): the service gives seconds, counted from
// when it received the request that handed or renewed the lease, and the node counts them from when it sent that
// request, on its monotonic clock. The request left before the service received it, so the node's reckoning ends
// no later than the service's, whatever either wall clock says, and time this process spent frozen (SIGSTOP) is
// counted: a node that wakes past its lease knows it before it starts anything. The renewals are timed the same way.
import { hostname } from 'node:os';
import type { Clock } from '../../lib/clock.js';
import { RUN_CANCELLED } from '../runner/agent-process.js';
import type { NodeApi } from '../service/node-api.js';

export class RunLease {
  readonly #clock: Clock;
  /** On `#clock`: when the lease ends at the earliest. */
  #endsAt: number;

  /** `sentAt`: the monotonic time the request that got the lease was sent; `seconds`: what the service answered. */
  constructor(clock: Clock, sentAt: number, seconds: number) {
    this.#clock = clock;
    this.#endsAt = sentAt + seconds * 1000;
  }

  /** Milliseconds left (0 once it has passed). */
  get leftMs(): number {
    return Math.max(0, this.#endsAt - this.#clock.now());
  }

  get passed(): boolean {
    return this.leftMs === 0;
  }

  /** A renewal sent at `sentAt` was answered with a lease of `seconds`: it ends that long after, at the earliest. */
  renewed(sentAt: number, seconds: number): void {
    this.#endsAt = Math.max(this.#endsAt, sentAt + seconds * 1000);
  }
}

/**
 * The seconds a lease runs from the request that got it: the service's own figure when it sends one; from an older
 * service, its expiry less this host's wall clock, as nodes counted it before.
 */
export function leaseSecondsOf(given: number | undefined, expiresAt: string, wallNow: number): number {
  return given ?? Math.max(0, (Date.parse(expiresAt) - wallNow) / 1000);
}

/** A renewal that failed is tried again this soon, doubling, never later than the next renewal was due. */
const RENEW_RETRY_FIRST_MS = 500;

/**
 * Renews the lease while the agent works, a third of the lease at a time (a poll that asks for nothing), measured
 * on the monotonic clock from the seconds the service gives: a run longer than the lease keeps it, a host whose
 * wall clock is off renews as often as any other, and a run the service no longer lets this node hold is stopped.
 * A renewal that fails is tried again soon, never later than the next one was due.
 */
export function renewWhileRunning(
  api: NodeApi,
  version: string,
  run: { run_id: string; lease: RunLease },
  stopped: AbortController,
  monotonic: Clock,
): { stop(): void; readonly lost: boolean } {
  // The first renewal a third of what is left; then a third of the lease the service gives at each renewal.
  let everyMs = Math.max(200, run.lease.leftMs / 3);
  let retryMs = RENEW_RETRY_FIRST_MS;
  let lost = false;
  let over = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (ms: number): void => {
    if (over) return;
    timer = setTimeout(renew, Math.max(50, Math.floor(ms)));
    timer.unref();
  };
  const renew = (): void => {
    const sentAt = monotonic.now();
    api
      .poll({ hostname: hostname(), version, capacity: 0, running: [run.run_id], wait_seconds: 0 })
      .then((answer) => {
        if (answer.lost.includes(run.run_id)) {
          lost = true;
          stopped.abort();
          return;
        }
        if (answer.cancel?.includes(run.run_id) === true) stopped.abort(RUN_CANCELLED);
        run.lease.renewed(sentAt, answer.lease_seconds);
        everyMs = Math.max(200, (answer.lease_seconds * 1000) / 3);
        retryMs = RENEW_RETRY_FIRST_MS;
        schedule(everyMs);
      })
      .catch(() => {
        schedule(Math.min(retryMs, everyMs));
        retryMs *= 2;
      });
  };
  schedule(everyMs);
  return {
    stop: () => {
      over = true;
      clearTimeout(timer);
    },
    get lost() {
      return lost;
    },
  };
}

// A run's lease as this node reckons it (docs/api.md "Leases as durations"): the service gives seconds, counted from
// when it received the request that handed or renewed the lease, and the node counts them from when it sent that
// request, on its monotonic clock. The request left before the service received it, so the node's reckoning ends
// no later than the service's, whatever either wall clock says, and time this process spent frozen (SIGSTOP) is
// counted: a node that wakes past its lease knows it before it starts anything.
import type { Clock } from '../../lib/clock.js';

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

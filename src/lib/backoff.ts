// A capped, jittered backoff that starts over on success: what a node waits between two tries of something that
// failed (a probe of an unreachable service, a result it could not report, a renewal). Only a failure of the thing
// retried advances it; it never grows past its cap, so a node is back within one cap of the service's return.

export class CappedBackoff {
  readonly #firstMs: number;
  readonly #capMs: number;
  #nextMs: number;

  constructor(firstMs: number, capMs: number) {
    this.#firstMs = Math.min(firstMs, capMs);
    this.#capMs = capMs;
    this.#nextMs = this.#firstMs;
  }

  /** The wait before the next try (±20 % jitter, so nodes cut off together do not come back in step); then doubles. */
  next(): number {
    const base = this.#nextMs;
    this.#nextMs = Math.min(this.#capMs, this.#nextMs * 2);
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  /** It worked: the next failure waits the first wait again. */
  reset(): void {
    this.#nextMs = this.#firstMs;
  }
}

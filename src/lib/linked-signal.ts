// A signal that aborts when any of several does, and lets go of them when its user is done. AbortSignal.any() is not
// that: each call leaves an entry in every source signal, kept for as long as the source lives (Node 20 and 22,
// nodejs/node#55351; an observed composite still on 24, nodejs/node#64476). Combined per request with a signal that
// lives as long as the process (svc-api's drain), it grew svc-api's heap by one entry per long poll, about 55 bytes
// each, without end (docs/operations.md "bench:soak"). Here each source has one listener, removed by `release`.

export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** Takes this signal's listeners off its sources; call it once the signal is no longer needed. Idempotent. */
  release(): void;
}

/** Aborts with the reason of the first of `sources` to abort (at once if one already has). */
export function linkedSignal(sources: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const listening: { source: AbortSignal; onAbort: () => void }[] = [];
  const release = (): void => {
    for (const { source, onAbort } of listening.splice(0)) source.removeEventListener('abort', onAbort);
  };
  for (const source of sources) {
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const onAbort = (): void => {
      controller.abort(source.reason);
      release();
    };
    source.addEventListener('abort', onAbort, { once: true });
    listening.push({ source, onAbort });
  }
  if (controller.signal.aborted) release();
  return { signal: controller.signal, release };
}

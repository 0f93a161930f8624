// Waiting for a run or for work (src/api/runs/run-events.ts): a change is seen at once, never only at the recheck,
// whenever it happens, including while the wait's own first check is under way.
import { describe, expect, it } from 'vitest';
import { createRunEvents } from '../../src/api/runs/run-events.js';

/** A recheck and a wait far longer than the test's own timeout: only a wake-up can end these waits in time. */
const NEVER_MS = 10 * 60_000;

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

describe('run events', () => {
  it('a change while the first check is under way asks again right after it (a poll leasing under group commit)', async () => {
    const events = createRunEvents(NEVER_MS);
    const firstCheck = deferred<string | undefined>();
    let checks = 0;
    const waited = events.waitFor(
      { user: 'u1' },
      async () => {
        checks += 1;
        // The first check found nothing, but only answers after the run was queued; the second finds it.
        return checks === 1 ? firstCheck.promise : 'run-1';
      },
      NEVER_MS,
      new AbortController().signal,
    );
    events.queued('u1');
    firstCheck.resolve(undefined);
    expect(await waited).toBe('run-1');
    expect(checks).toBe(2);
  });

  it("ends at its deadline with what a check under way found: a poll's leased runs are not dropped", async () => {
    const events = createRunEvents(NEVER_MS);
    const leasing = deferred<string | undefined>();
    let checks = 0;
    const stop = new AbortController();
    const waited = events.waitFor({ user: 'u2' }, async () => (++checks === 1 ? undefined : leasing.promise), NEVER_MS, stop.signal);
    await new Promise((resolve) => setImmediate(resolve));
    // Woken: the second check leases a run, and the wait ends while it does.
    events.queued('u2');
    expect(checks).toBe(2);
    stop.abort();
    leasing.resolve('leased-run');
    expect(await waited).toBe('leased-run');
  });

  it('answers at once without waiting when the first check finds it, and undefined with no time to wait', async () => {
    const events = createRunEvents(NEVER_MS);
    const signal = new AbortController().signal;
    expect(await events.waitFor({ run: 'r1' }, async () => 'found', NEVER_MS, signal)).toBe('found');
    expect(await events.waitFor({ run: 'r1' }, async () => undefined, 0, signal)).toBeUndefined();
    const later = events.waitFor({ run: 'r2' }, (() => { let n = 0; return async () => (++n > 1 ? 'finished' : undefined); })(), NEVER_MS, signal);
    await new Promise((resolve) => setImmediate(resolve));
    events.finished('r2');
    expect(await later).toBe('finished');
  });
});

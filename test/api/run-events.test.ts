// Waiting for a run or for work (src/api/runs/run-events.ts): a change is seen at once, never only at the recheck,
// whenever it happens, including while the wait's own first check is under way; and it wakes what it concerns, once:
// one poll of each node for a queued run, every poll for a cancel, and a run's waiters with its answer.
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
      { work: 'u1', node: 'n1' },
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
    const waited = events.waitFor(
      { work: 'u2', node: 'n1' },
      async () => (++checks === 1 ? undefined : leasing.promise),
      NEVER_MS,
      stop.signal,
    );
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
    const later = events.waitFor(
      { run: 'r2' },
      (() => {
        let n = 0;
        return async () => (++n > 1 ? 'finished' : undefined);
      })(),
      NEVER_MS,
      signal,
    );
    await new Promise((resolve) => setImmediate(resolve));
    events.finished('r2');
    expect(await later).toBe('finished');
  });

  it('a queued run wakes one idle poll of each node of its user, not every poll; a cancel wakes them all', async () => {
    const events = createRunEvents(NEVER_MS);
    const stop = new AbortController();
    const looks = new Map<string, number>();
    /** A held poll of `node` that counts its looks after the first and never finds anything. */
    const poll = (node: string, name: string): Promise<undefined> =>
      events.waitFor(
        [{ user: 'u3' }, { work: 'u3', node }],
        async (wake) => {
          if (wake.reason === 'event') looks.set(name, (looks.get(name) ?? 0) + 1);
          return undefined;
        },
        NEVER_MS,
        stop.signal,
      );
    const held = [poll('n1', 'a'), poll('n1', 'b'), poll('n1', 'c'), poll('n2', 'd')];
    await new Promise((resolve) => setImmediate(resolve));
    events.queued('u3');
    await new Promise((resolve) => setImmediate(resolve));
    expect([...looks.values()].reduce((sum, n) => sum + n, 0)).toBe(2);
    expect(looks.get('d')).toBe(1);
    // The next queued run wakes another of n1's polls: the one woken last goes to the back.
    events.queued('u3');
    await new Promise((resolve) => setImmediate(resolve));
    expect(['a', 'b', 'c'].filter((name) => looks.get(name) === 1)).toHaveLength(2);
    expect(looks.get('d')).toBe(2);
    events.cancelAsked('u3');
    await new Promise((resolve) => setImmediate(resolve));
    expect(['a', 'b', 'c', 'd'].map((name) => looks.get(name) ?? 0).reduce((sum, n) => sum + n, 0)).toBe(4 + 4);
    stop.abort();
    expect(await Promise.all(held)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("hands a run's waiters the answer it finished with, which they then need not read", async () => {
    const events = createRunEvents(NEVER_MS);
    const signal = new AbortController().signal;
    const reads: string[] = [];
    const waited = events.waitFor({ run: 'r3' }, async (wake) => wake.hint ?? (reads.push(wake.reason), undefined), NEVER_MS, signal);
    await new Promise((resolve) => setImmediate(resolve));
    events.finished('r3', '{"run_id":"r3"}');
    expect(await waited).toBe('{"run_id":"r3"}');
    expect(reads).toEqual(['first']);
  });
});

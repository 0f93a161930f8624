// src/lib/linked-signal.ts: aborts with the first source that does, and leaves nothing on its sources once released.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkedSignal } from '../../src/lib/linked-signal.js';

describe('linkedSignal', () => {
  it('aborts with the reason of the first source to abort, and lets go of the others then', () => {
    const long = new AbortController();
    const short = new AbortController();
    const linked = linkedSignal([long.signal, short.signal]);
    expect(linked.signal.aborted).toBe(false);
    short.abort(new Error('client gone'));
    expect(linked.signal.aborted).toBe(true);
    expect((linked.signal.reason as Error).message).toBe('client gone');
    expect(getEventListeners(long.signal, 'abort')).toHaveLength(0);
  });

  it('is aborted at once when a source already is', () => {
    const done = AbortSignal.abort('drained');
    const other = new AbortController();
    const linked = linkedSignal([other.signal, done]);
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe('drained');
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
  });

  it('released, leaves a long-lived source as it found it, however many were linked to it', () => {
    const long = new AbortController();
    for (let request = 0; request < 1_000; request += 1) linkedSignal([long.signal, new AbortController().signal]).release();
    expect(getEventListeners(long.signal, 'abort')).toHaveLength(0);
  });
});

// Time-ordered ids (src/lib/time-ordered-id.ts): UUID version 7, sorted by their time, and within one millisecond of
// this process by the order they were made.
import { describe, expect, it } from 'vitest';
import { timeOrderedId } from '../../src/lib/time-ordered-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedId', () => {
  it('is a version 7 UUID whose first 48 bits are the time', () => {
    const id = timeOrderedId(Date.UTC(2026, 10, 26, 12, 0, 0, 123));
    expect(id).toMatch(UUID_V7);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.UTC(2026, 10, 26, 12, 0, 0, 123));
  });

  it('sorts the ids of one millisecond in the order they were made, and after the millisecond before', () => {
    const now = Date.UTC(2026, 10, 26, 12, 0, 1);
    const earlier = timeOrderedId(now - 1);
    const made = Array.from({ length: 500 }, () => timeOrderedId(now));
    expect([...made].sort()).toEqual(made);
    expect(new Set(made).size).toBe(made.length);
    expect(earlier < made[0]!).toBe(true);
  });
});

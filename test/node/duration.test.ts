import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/contract/errors.js';
import { formatDuration, parseDuration } from '../../src/node/agents/duration.js';

describe('durations for register --every', () => {
  it('parses a whole number and a unit, 1s to 7d', () => {
    expect(parseDuration('1s')).toBe(1);
    expect(parseDuration('30s')).toBe(30);
    expect(parseDuration('5m')).toBe(300);
    expect(parseDuration('1h')).toBe(3600);
    expect(parseDuration('7d')).toBe(604_800);
    expect(parseDuration(' 2h ')).toBe(7200);
  });

  it('refuses anything else as a usage error', () => {
    for (const text of ['', '0s', '8d', '604801s', '169h', '1.5m', '5', 'm', '-1s', '5 minutes', '1e3s', '5M', '99999999s']) {
      expect(() => parseDuration(text), text).toThrow(SvcError);
      try {
        parseDuration(text);
      } catch (error) {
        expect((error as SvcError).code).toBe('usage');
      }
    }
  });

  it('formats with the largest exact unit, so a formatted value parses back to itself', () => {
    expect(formatDuration(1)).toBe('1s');
    expect(formatDuration(90)).toBe('90s');
    expect(formatDuration(300)).toBe('5m');
    expect(formatDuration(5400)).toBe('90m');
    expect(formatDuration(86_400)).toBe('1d');
    for (const seconds of [1, 59, 60, 61, 3599, 3600, 86_399, 86_400, 604_800])
      expect(parseDuration(formatDuration(seconds))).toBe(seconds);
  });
});

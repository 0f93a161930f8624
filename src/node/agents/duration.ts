// Schedules for `register --every`: a whole number and a unit (s, m, h, d), from one second to seven days.
import { SvcError } from '../../contract/errors.js';

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
export const MIN_EVERY_SECONDS = 1;
export const MAX_EVERY_SECONDS = 7 * 86_400;

/** "30s" → 30, "5m" → 300; anything else, or outside 1s..7d, is a usage error. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d{1,7})\s*([smhd])\s*$/.exec(text);
  if (match === null) {
    throw new SvcError('usage', `"${text}" is not a duration`, { remedy: 'Write a whole number and a unit: 1s, 30s, 5m, 1h or 1d.' });
  }
  const seconds = Number(match[1]) * UNIT_SECONDS[match[2] as keyof typeof UNIT_SECONDS];
  if (seconds < MIN_EVERY_SECONDS || seconds > MAX_EVERY_SECONDS) {
    throw new SvcError('usage', `the interval ${text.trim()} is outside 1s..7d`, { remedy: 'Choose an interval from 1s to 7d.' });
  }
  return seconds;
}

/** 300 → "5m", 90 → "90s": the largest unit that divides it exactly, so it reads back as it parses. */
export function formatDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNIT_SECONDS[unit];
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

// --every and --daily-cap, as register and wizard take them: a value, or a word that clears it.
import { InvalidArgumentError } from 'commander';
import type { SvcError } from '../contract/errors.js';
import { parseDollarsToCents } from '../contract/money.js';
import { parseDuration } from '../node/agents/duration.js';

/** What clears a value. A word, not null: commander turns an option value of null into ''. */
const CLEARED = 'none';
export type Cleared = typeof CLEARED;

const CLEAR = new Set(['none', 'off']);

export function parseEvery(value: string): number | Cleared {
  if (CLEAR.has(value)) return CLEARED;
  try {
    return parseDuration(value);
  } catch (error) {
    // The duration's own words say the range when it is out of it; what is not a duration gets the form.
    const message = (error as SvcError).message;
    throw new InvalidArgumentError(
      /outside/.test(message) ? `${message} (e.g. 30s, 5m, 1h, or none)` : `${message}: write 30s, 5m, 1h or 1d (1s..7d), or none`,
    );
  }
}

export function parseDailyCap(value: string): number | Cleared {
  if (CLEAR.has(value)) return CLEARED;
  const cents = parseDollarsToCents(value);
  if (cents === undefined) throw new InvalidArgumentError('give dollars such as 1.50 or 2 (or none)');
  return cents;
}

export function cleared(value: number | Cleared | undefined): number | null | undefined {
  return value === CLEARED ? null : value;
}

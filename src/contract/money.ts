// Money is integer cents in code, storage and the API (docs/decisions/0002-money-in-integer-cents.md); dollars only
// for people.

export function formatDollars(cents: number): string {
  if (!Number.isSafeInteger(cents)) throw new TypeError(`cents must be an integer, got ${cents}`);
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** Parses "1.50", "$1.5" or "2" into cents without ever going through a float. */
export function parseDollarsToCents(text: string): number | undefined {
  const match = /^\s*\$?(\d{1,9})(?:\.(\d{1,2}))?\s*$/.exec(text);
  if (!match) return undefined;
  const whole = Number(match[1]);
  const fraction = Number((match[2] ?? '').padEnd(2, '0'));
  return whole * 100 + fraction;
}

// The `limit` of every listing's query (docs/api.md "Conventions"): a whole number from 1 to the listing's most, or
// the request is refused 400, never clamped, so a client that asks for more than it gets learns it at once. Text,
// as every query string (the service never coerces types); the range is the schema's, so the OpenAPI document
// declares it and every listing refuses alike.
import { Type } from '@sinclair/typebox';

/** A regular expression matching exactly the whole numbers 1 to `max`, without leading zeros. */
export function wholeNumberPattern(max: number): string {
  if (!Number.isInteger(max) || max < 1) throw new Error(`a page limit is a whole number from 1, not ${max}`);
  const digits = String(max);
  const alternatives: string[] = [];
  // The numbers with fewer digits than max, all of them.
  for (let length = 1; length < digits.length; length += 1) alternatives.push(`[1-9]${anyDigits(length - 1)}`);
  // Those with as many: max's leading digits, then one digit below max's, then any digits; and max itself.
  for (let at = 0; at < digits.length; at += 1) {
    const lowest = at === 0 ? 1 : 0;
    const below = Number(digits[at]) - 1;
    if (below < lowest) continue;
    alternatives.push(`${digits.slice(0, at)}${below === lowest ? lowest : `[${lowest}-${below}]`}${anyDigits(digits.length - at - 1)}`);
  }
  alternatives.push(digits);
  return `^(?:${alternatives.join('|')})$`;
}

function anyDigits(count: number): string {
  return count === 0 ? '' : count === 1 ? '[0-9]' : `[0-9]{${count}}`;
}

/** The optional `limit` of a listing's query schema. */
export function PageLimit(max: number, defaultLimit: number) {
  return Type.Optional(
    Type.String({
      pattern: wholeNumberPattern(max),
      description: `How many to answer: 1 to ${max} (default ${defaultLimit}); another value is refused 400`,
    }),
  );
}

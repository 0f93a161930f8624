// What the review prints never holds a credential or a part of one, whatever tool's text it is (bandit quotes a
// hard-coded password in its message, ESLint and shellcheck quote code, git quotes paths and lines): the findings,
// the SARIF made from them, the output and any error pass here before they are written (docs/sections/starter-agents.md).
// Three nets: the secrets the review found in the change, by value, a part of one too; the secret detector itself,
// run over each text; and the quoted literal of a message that says it is a password.
import { findSecrets, SECRET_VALUE } from './secrets.mjs';

export const REDACTED = '[redacted]';
/** The shortest run of a known secret's characters that counts as a part of it. */
const PART_CHARS = 8;
/**
 * Letters of one case, and a path's or a name's punctuation: a window of a known secret that reads as a word or a
 * path ("internal", "service-account" of a file name), not as a part a key gives away; left where it shows.
 */
const WORDLIKE = /^(?:[a-z._/-]+|[A-Z._/-]+)$/;
/** The literal a "hard-coded password" message quotes (bandit B105, B106, B107, and tools worded alike). */
const QUOTED_PASSWORD = /(hard-?coded password[^'"`\n]*)(['"`])([^'"`\n]+)\2/gi;

export function createRedactor() {
  const known = new Set();
  const done = new Map();

  /** `text` with every part of PART_CHARS or more of a known secret (`values`, longest first) replaced. */
  const withoutKnown = (text, values) => {
    let out = text;
    for (const value of values) {
      if (value.length < PART_CHARS) {
        out = out.replaceAll(value, REDACTED);
        continue;
      }
      for (let start = 0; start + PART_CHARS <= value.length; ) {
        let end = start + PART_CHARS;
        if (WORDLIKE.test(value.slice(start, end)) || !out.includes(value.slice(start, end))) {
          start += 1;
          continue;
        }
        while (end < value.length && out.includes(value.slice(start, end + 1))) end += 1;
        out = out.replaceAll(value.slice(start, end), REDACTED);
        start = end;
      }
    }
    return out;
  };

  /**
   * Redacts each of `strings` by all three nets, at once: the detector reads them as one text, a blank line between
   * two, in one pass (a review can have thousands of findings, and the detector's start is the cost of a pass).
   */
  const prepare = async (strings) => {
    const fresh = [...new Set(strings)].filter((raw) => raw !== '' && !done.has(raw));
    if (fresh.length === 0) return;
    const values = [...known].sort((a, b) => b.length - a.length);
    const netted = fresh.map((raw) => withoutKnown(raw, values).replace(QUOTED_PASSWORD, (_, lead, quote) => `${lead}${quote}${REDACTED}${quote}`));
    const joined = netted.join('\n\n');
    const lines = new Set(joined.split('\n').map((_, index) => index + 1));
    const found = (await findSecrets('review-output.txt', joined, lines)).map((secret) => secret[SECRET_VALUE]).filter(Boolean);
    found.sort((a, b) => b.length - a.length);
    fresh.forEach((raw, index) => done.set(raw, found.reduce((out, value) => out.replaceAll(value, REDACTED), netted[index])));
  };

  const stringsOf = (value, into = []) => {
    if (typeof value === 'string') into.push(value);
    else if (Array.isArray(value)) for (const item of value) stringsOf(item, into);
    else if (value !== null && typeof value === 'object') for (const field of Object.values(value)) stringsOf(field, into);
    return into;
  };

  const rebuilt = (value) => {
    if (typeof value === 'string') return done.get(value) ?? value;
    if (Array.isArray(value)) return value.map(rebuilt);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, rebuilt(field)]));
  };

  /** `raw` redacted by all three nets. */
  const text = async (raw) => {
    if (typeof raw !== 'string') return raw;
    await prepare([raw]);
    return done.get(raw) ?? raw;
  };

  /** Every string of `value` (arrays and plain objects, at any depth) redacted, in a copy; `value` stays as it was. */
  const deep = async (value) => {
    await prepare(stringsOf(value));
    return rebuilt(value);
  };

  return {
    /** A secret the review found: it is taken out of everything written after, wherever it shows. */
    learn(secret) {
      const value = secret[SECRET_VALUE];
      if (typeof value !== 'string' || value.length === 0) return;
      known.add(value);
      done.clear();
    },
    text,
    deep,
    /** The error with its message, stack and partial review (IncompleteRunError's `done`) redacted. */
    async error(error) {
      if (!(error instanceof Error)) return error;
      error.message = await text(error.message);
      if (typeof error.stack === 'string') error.stack = await text(error.stack);
      if (typeof error.done === 'string') error.done = await text(error.done);
      return error;
    },
  };
}

// Redaction of a run's secrets (docs/api.md "Secrets"): the value, its URL-encoded forms and its base64 forms,
// alone or inside longer text, at every alignment base64 can give it, become ***; other text stays as it was.
import { describe, expect, it } from 'vitest';
import { createRedactor, redactJson, REDACTED } from '../../src/lib/redact.js';

const SECRET = 'sk_live_LEAKCHECK_42';

describe('redact', () => {
  const redact = createRedactor([SECRET, 'p@ss word/+&=?']);

  it('hides the value as it is, wherever it is', () => {
    expect(redact(`using token ${SECRET} now`)).toBe(`using token ${REDACTED} now`);
    expect(redact(`${SECRET}${SECRET}`)).toBe(`${REDACTED}${REDACTED}`);
    expect(redact('nothing to hide here')).toBe('nothing to hide here');
  });

  it("hides its URL-encoded forms, either case of hex, and a form's + for a space", () => {
    const value = 'p@ss word/+&=?';
    const encoded = encodeURIComponent(value);
    expect(encoded).not.toBe(value);
    for (const form of [encoded, encoded.toLowerCase().replace(/^p/, 'p'), encoded.replace(/%20/g, '+')]) {
      expect(redact(`https://example.com/?key=${form}&x=1`)).toBe(`https://example.com/?key=${REDACTED}&x=1`);
    }
  });

  it('hides its base64, standard and URL-safe, padded or not, alone and inside longer base64 at every alignment', () => {
    for (const prefix of ['', 'a', 'ab', 'abc', 'Authorization: Basic ']) {
      const text = `${prefix}${SECRET}:and more after it`;
      for (const encoding of ['base64', 'base64url'] as const) {
        const encoded = Buffer.from(text).toString(encoding);
        const hidden = redact(encoded);
        expect(hidden, `${encoding} of ${JSON.stringify(text)}`).toContain(REDACTED);
        // What is left decodes to nothing that holds the value.
        expect(Buffer.from(hidden.replace(REDACTED, ''), encoding).toString()).not.toContain('LEAKCHECK');
      }
    }
    const alone = Buffer.from(SECRET).toString('base64');
    expect(redact(alone)).toBe(REDACTED);
    expect(redact(alone.replace(/=+$/, ''))).toBe(REDACTED);
  });

  it('hides values in every string of a JSON value, keys too, and leaves the rest', () => {
    const output = {
      summary: `key ${SECRET}`,
      [SECRET]: [1, { nested: Buffer.from(SECRET).toString('base64') }],
      count: 3,
      ok: true,
      none: null,
    };
    expect(redactJson(output, redact)).toEqual({
      summary: `key ${REDACTED}`,
      [REDACTED]: [1, { nested: REDACTED }],
      count: 3,
      ok: true,
      none: null,
    });
  });

  it('is the identity without values, and never hides a short base64 fragment of a short value', () => {
    expect(createRedactor([])('anything')).toBe('anything');
    const short = createRedactor(['abcd']);
    expect(short('xx abcd yy')).toBe(`xx ${REDACTED} yy`);
    // "abcd"'s base64 at an offset keeps only two characters that are its own: too few to hide.
    expect(short('YWJj ZGVm')).toBe('YWJj ZGVm');
  });
});

import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/contract/errors.js';
import { daysLeft, decodeClaims, expiresSoon, expiryOf, EXPIRY_WARNING_DAYS, normalizeTokenText } from '../../src/node/identity/token.js';

function jwt(payload: unknown): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'HS256', typ: 'JWT' })}.${part(payload)}.c2lnbmF0dXJl`;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof SvcError ? error.code : 'not a SvcError';
  }
  return undefined;
}

describe('reading a JWT on the node', () => {
  it('decodes the claims from the payload without the key', () => {
    const token = jwt({
      sub: 'a@example.com',
      tier: 'svc_starter_agents',
      exp: 2_000_000_000,
      iat: 1_999_000_000,
      chainId: 1202,
      nodeAccess: 'isolated_svc_server',
    });
    expect(decodeClaims(token)).toEqual({
      sub: 'a@example.com',
      tier: 'svc_starter_agents',
      exp: 2_000_000_000,
      iat: 1_999_000_000,
      chainId: 1202,
      nodeAccess: 'isolated_svc_server',
    });
  });

  it('refuses what is not one of our access tokens as unauthorized (exit 4, as the README says), without quoting it', () => {
    for (const token of [
      '',
      'abc',
      'a.b',
      'a.b.c.d',
      'a b.c.d',
      jwt({ tier: 't', exp: 1 }),
      jwt({ sub: 's', exp: 1 }),
      jwt({ sub: 's', tier: 't', exp: '1' }),
      'x.bm90IGpzb24.y',
      `${'a'.repeat(9000)}.b.c`,
    ]) {
      expect(
        codeOf(() => decodeClaims(token)),
        token.slice(0, 40),
      ).toBe('unauthorized');
    }
    try {
      decodeClaims('secretpart.bm90IGpzb24.y');
    } catch (error) {
      expect((error as Error).message).not.toContain('secretpart');
    }
  });

  it('takes a token from a file or stdin without its surrounding whitespace, and bounds its size', () => {
    expect(normalizeTokenText('  a.b.c\n', 'f')).toBe('a.b.c');
    expect(codeOf(() => normalizeTokenText(' \n', 'f'))).toBe('usage');
    expect(codeOf(() => normalizeTokenText('a'.repeat(8193), 'f'))).toBe('usage');
  });

  it('counts days left with a started day as one, and 0 once expired', () => {
    const now = Date.UTC(2025, 0, 1);
    expect(daysLeft(now + 30 * 86_400_000, now)).toBe(30);
    expect(daysLeft(now + 29 * 86_400_000 + 1, now)).toBe(30);
    expect(daysLeft(now + 1, now)).toBe(1);
    expect(daysLeft(now, now)).toBe(0);
    expect(daysLeft(now - 86_400_000, now)).toBe(0);
  });

  it('flags a token within one warning period of its expiry, the same for status, doctor and the daemon', () => {
    const now = Date.UTC(2025, 0, 1);
    expect(EXPIRY_WARNING_DAYS).toBe(7);
    expect(expiresSoon(now + 7 * 86_400_000, now)).toBe(true);
    expect(expiresSoon(now + 7 * 86_400_000 + 1, now)).toBe(false);
    expect(expiresSoon(now - 1, now)).toBe(true);
  });

  it("reads a stored token's expiry with the same decoder, and nothing from what has none", () => {
    expect(expiryOf(jwt({ sub: 's', tier: 't', exp: 2_000_000_000 }))).toBe(2_000_000_000);
    for (const token of ['', 'abc', 'x.bm90IGpzb24.y', jwt({ sub: 's', exp: '1' }), jwt(null)])
      expect(expiryOf(token), token).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { Chalk } from 'chalk';
import { keyValues, shortTime, table } from '../../src/cli/table.js';

describe('human tables', () => {
  it('aligns columns by visible width, colour codes included, right-aligning where asked, with no trailing spaces', () => {
    const red = new Chalk({ level: 1 }).red;
    const text = table(
      ['AGENT', 'COST', 'NOTE'],
      [
        ['a', '$0.12', red('failed')],
        ['longer_name', '$10.00', 'ok'],
      ],
      ['left', 'right'],
    );
    const plain = text.replace(/\u001b\[[0-9;]*m/g, '');
    expect(plain.split('\n')).toEqual(['AGENT          COST  NOTE', 'a             $0.12  failed', 'longer_name  $10.00  ok']);
    expect(text).toContain(red('failed'));
  });

  it('lines up keys and values, and shortens ISO times for tables', () => {
    expect(
      keyValues([
        ['a', '1'],
        ['long key', '2'],
      ]),
    ).toBe('a         1\nlong key  2');
    expect(shortTime('2025-01-02T13:04:05.678Z')).toBe('2025-01-02 13:04:05Z');
  });
});

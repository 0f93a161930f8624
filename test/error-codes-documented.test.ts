// Every error code is documented, and every documented code exists (as fastify holds its errors to its docs): the
// service's codes (those with an HTTP status) in docs/api.md "Error codes", the client's own (no status) in
// docs/operations.md "Troubleshooting by exit code", which maps each to its exit code.
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { ERROR_CODES } from '../src/contract/error-codes.js';

const section = (file: string, heading: string): string => {
  const text = readFileSync(new URL(`../docs/${file}`, import.meta.url), 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  expect(start, `${file} has a section ${heading}`).toBeGreaterThan(-1);
  const next = text.slice(start + heading.length + 2).search(/\n#{1,3} /);
  return next === -1 ? text.slice(start) : text.slice(start, start + heading.length + 2 + next);
};

const codes = Object.entries(ERROR_CODES);
const served = codes.filter(([, info]) => info.status !== null).map(([code]) => code);
const clientOnly = codes.filter(([, info]) => info.status === null).map(([code]) => code);

it("every code the service answers is a row of docs/api.md's table, and every row there is a code", () => {
  const table = section('api.md', '## Error codes');
  const rows = new Set([...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]!));
  expect(
    served.filter((code) => !rows.has(code)),
    'codes with no row',
  ).toEqual([]);
  expect(
    [...rows].filter((code) => !Object.hasOwn(ERROR_CODES, code)),
    'rows naming no code',
  ).toEqual([]);
});

it("every code of the client's own is in docs/operations.md's exit code table, and every code named there exists", () => {
  const table = section('operations.md', '## Troubleshooting by exit code');
  // | exit | meaning | error codes | what to do |: the third column names the codes, each in backquotes.
  const column = table
    .split('\n')
    .filter((line) => /^\| \d+ \|/.test(line))
    .map((line) => line.split(' | ')[2] ?? '');
  const named = new Set(column.flatMap((cell) => [...cell.matchAll(/`([a-z][a-z_]*)`/g)].map((match) => match[1]!)));
  expect(
    clientOnly.filter((code) => !named.has(code)),
    'client codes with no exit code documented',
  ).toEqual([]);
  expect(
    [...named].filter((code) => !Object.hasOwn(ERROR_CODES, code)),
    'names in the table that are no code',
  ).toEqual([]);
});

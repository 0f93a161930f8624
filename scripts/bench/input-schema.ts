// What checking an input against an uploaded input_schema costs (docs/api.md "Agent upload"), on the path the
// service takes for an upload (src/contract/input-schema.ts: Ajv, patterns on RE2, a deadline per check):
//   redos        `^(a+)+$` against 28 `a`s and `!`, the input that froze svc-api for 19.9 s on V8's RegExp: goal
//                under 10 ms a check (p99), the deadline's own overhead included
//   redos-40     the same with 40 `a`s: RE2's time grows with the input's length, not exponentially
//   built-in     the research agent's schema (trusted: no deadline) on a typical input, the common case
//   v8-22        V8's backtracking RegExp on 22 `a`s and `!`, for contrast (every character doubles it)
// Figures only; nothing here is asserted (tests never time anything).
// Run with: npm run bench:input-schema -- [--checks N]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { compileInputSchema, type CompiledInputSchema } from '../../src/contract/input-schema.js';
import { median, percentileOf, positiveInteger, table } from './support.js';

declare const REPO_ROOT: string;

const { values } = parseArgs({ options: { checks: { type: 'string', default: '2000' }, help: { type: 'boolean', default: false } } });
if (values.help) {
  process.stdout.write('Usage: npm run bench:input-schema -- [--checks N]   (checks per case, default 2000)\n');
  process.exit(0);
}
const checks = positiveInteger(values.checks, '--checks');

function measure(check: () => unknown, count: number): number[] {
  for (let i = 0; i < Math.min(200, count); i += 1) check(); // warm-up: compiled code, not the interpreter
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    check();
    times.push(performance.now() - started);
  }
  return times;
}

const redosSchema = compileInputSchema({ type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } } });
const attack = (length: number) => ({ name: `${'a'.repeat(length)}!` });
const expectRefused = (schema: CompiledInputSchema, input: unknown): void => {
  if (schema.problems(input).length === 0) throw new Error('the attack input passed its schema');
};
expectRefused(redosSchema, attack(28));

const research = JSON.parse(readFileSync(join(REPO_ROOT, 'agents', 'agent_research_rag_015', 'agent.json'), 'utf8')) as {
  input_schema: Record<string, unknown>;
};
const builtIn = compileInputSchema(research.input_schema, { trusted: true });
const v8 = /^(a+)+$/;

const cases: Array<[string, number[]]> = [
  ['redos', measure(() => redosSchema.problems(attack(28)), checks)],
  ['redos-40', measure(() => redosSchema.problems(attack(40)), checks)],
  ['built-in', measure(() => builtIn.problems({ corpus: '/srv/notes', question: 'what changed in the last release?' }), checks)],
  ['v8-22', measure(() => v8.test(`${'a'.repeat(22)}!`), 5)],
];

const ms = (value: number): string => value.toFixed(3);
process.stdout.write(
  `${table([
    ['case', 'checks', 'median ms', 'p99 ms', 'max ms'],
    ...cases.map(([name, times]) => [name, String(times.length), ms(median(times)), ms(percentileOf(times, 0.99)), ms(Math.max(...times))]),
  ])}\n`,
);
const redosP99 = percentileOf(cases[0]![1], 0.99);
process.stdout.write(`redos: p99 ${ms(redosP99)} ms a check (goal: under 10 ms): ${redosP99 < 10 ? 'met' : 'NOT MET'}\n`);

// An agent's input_schema (docs/api.md "Agent upload", "Input checked before the charge"): JSON Schema 2020-12,
// checked with Ajv, the one module the service (a run's input before the charge), the bundle reader (a schema at
// upload, on the node before it installs, in the CLI before it sends) and the node (a registration's default
// input) share, so all three accept and refuse the same. Whoever uploads a schema is a stranger to the service:
// - every `pattern` runs on RE2 (linear-regexp.ts), and a schema with a pattern RE2 cannot run is refused;
// - a keyword Ajv does not know is refused (strict), so no constraint an author wrote goes silently unenforced;
// - checking an input is bounded in time (within-deadline.ts) whatever the schema's shape.
// Ajv is loaded by the modules that import this one only: importers on the CLI's path load it with `import()`.
import Ajv2020, { type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import { describeErrors, type SchemaIssue } from './input-schema-messages.js';
import { PatternRefused, linearRegExpEngine, type LinearPattern } from './linear-regexp.js';
import { DeadlineExceeded, withinDeadline } from './within-deadline.js';

export type { SchemaIssue } from './input-schema-messages.js';
export { DeadlineExceeded } from './within-deadline.js';

/** How deep a schema may nest (objects and arrays of its JSON): deep enough for any input, shallow enough to walk. */
export const MAX_SCHEMA_DEPTH = 32;
/** The longest an input's check may take; what a schema makes slower is refused, not waited for. */
export const INPUT_CHECK_DEADLINE_MS = 100;
/** The longest compiling a schema may take (a 64 KiB agent.json compiles in a few milliseconds). */
export const SCHEMA_COMPILE_DEADLINE_MS = 1_000;

const OPTIONS: Options = {
  allErrors: true,
  // Unknown keywords refused; type checks left to the schema's author (strictTypes would refuse sound schemas such
  // as `properties` without `type: "object"`).
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  // The strict check of patternProperties against `properties` would run the pattern with V8's RegExp.
  allowMatchingProperties: true,
  // `format` is an annotation in 2020-12 unless a validator opts in; unchecked, as the schema's own vocabulary says.
  validateFormats: false,
  validateSchema: false,
  logger: false,
};

let metaSchemaChecker: Ajv2020 | undefined;

/** A schema Ajv cannot use; `issues` say where and why (paths into the schema). */
export class InputSchemaRefused extends Error {
  constructor(readonly issues: SchemaIssue[]) {
    super(issues.map((issue) => `${issue.path || '/'}: ${issue.message}`).join('; '));
  }
}

export interface CompiledInputSchema {
  /**
   * Where `input` fails the schema, each path from the input's root (''); none when it holds. Throws
   * DeadlineExceeded when the check takes longer than `deadlineMs` or nests without end.
   */
  problems(input: unknown, deadlineMs?: number): SchemaIssue[];
}

/** What in `schema` makes it unusable as an input_schema; none for one the service can check inputs against. */
export function schemaProblems(schema: unknown): SchemaIssue[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return [{ path: '', message: 'must be a JSON Schema object ({"type": "object", ...})' }];
  if (nestsDeeperThan(schema, MAX_SCHEMA_DEPTH)) return [{ path: '', message: `nests deeper than ${MAX_SCHEMA_DEPTH} levels` }];
  metaSchemaChecker ??= new Ajv2020({ ...OPTIONS, strictSchema: false, code: { regExp: linearRegExpEngine([]) } });
  if (!(metaSchemaChecker.validateSchema(schema) as boolean)) {
    // The meta-schema's alternatives go through references, so one mistake can read twice: the first word per place.
    const issues = describeErrors(metaSchemaChecker.errors ?? []);
    return issues.filter((issue, index) => issues.findIndex((other) => other.path === issue.path) === index);
  }
  try {
    // Compiled and tried on the input of a run that sends none: a schema that refers to itself without end, or
    // fans out so that even {} cannot be checked in time, is refused here rather than at every run. With the
    // compile's bound, not a run's: a busy host must not refuse a sound upload, and the runs keep their own.
    compileInputSchema(schema as Record<string, unknown>).problems({}, SCHEMA_COMPILE_DEADLINE_MS);
  } catch (error) {
    if (error instanceof InputSchemaRefused) return error.issues;
    if (error instanceof DeadlineExceeded)
      return [{ path: '', message: `cannot be checked in time: checking {} against it ${error.message}` }];
    throw error;
  }
  return [];
}

export interface CompileOptions {
  /**
   * The package's own schemas (the built-in agents'): checked without a deadline, their patterns' state kept
   * between checks. Anything uploaded is not trusted: each check is bounded by a deadline and leaves nothing behind.
   */
  trusted?: boolean;
  /** The compile's own bound (default SCHEMA_COMPILE_DEADLINE_MS). */
  deadlineMs?: number;
}

/** Compiles `schema` once for many checks; InputSchemaRefused when Ajv (or RE2) cannot use it. */
export function compileInputSchema(schema: Record<string, unknown>, options: CompileOptions = {}): CompiledInputSchema {
  const patterns: LinearPattern[] = [];
  let validate: ValidateFunction;
  try {
    // An Ajv of its own: a schema's `$id` is never registered where another user's schema could `$ref` it.
    validate = withinDeadline(options.deadlineMs ?? SCHEMA_COMPILE_DEADLINE_MS, () =>
      new Ajv2020({ ...OPTIONS, code: { regExp: linearRegExpEngine(patterns) } }).compile(schema),
    );
  } catch (error) {
    throw new InputSchemaRefused([compileProblem(schema, error)]);
  }
  // An asynchronous schema answers a promise, which a synchronous check would take for a pass.
  if ((validate as { $async?: unknown }).$async === true)
    throw new InputSchemaRefused([{ path: '/$async', message: 'must not be true: an input is checked synchronously' }]);
  const check = (input: unknown): SchemaIssue[] => (validate(input) ? [] : describeErrors(validate.errors ?? []));
  if (options.trusted === true) return { problems: check };
  return {
    problems(input, deadlineMs = INPUT_CHECK_DEADLINE_MS) {
      try {
        return withinDeadline(deadlineMs, () => check(input));
      } finally {
        for (const pattern of patterns) pattern.release();
      }
    },
  };
}

/**
 * Where a run's `input` fails `schema`, each pointer from the request body (`/input/repo`): what the service's 422
 * and the node's refusal of a stored input both name. No input is `{}`.
 */
export function runInputProblems(schema: Record<string, unknown>, input: unknown, options: CompileOptions = {}): SchemaIssue[] {
  return withInputPrefix(compileInputSchema(schema, options).problems(input ?? {}));
}

/** The issues of an input as the body of an execute names them. */
export function withInputPrefix(issues: readonly SchemaIssue[]): SchemaIssue[] {
  return issues.map((issue) => ({ path: `/input${issue.path}`, message: issue.message }));
}

function compileProblem(schema: Record<string, unknown>, error: unknown): SchemaIssue {
  if (error instanceof PatternRefused)
    return {
      path: pathOf(schema, (key, value) => (key === 'pattern' && value === error.pattern) || key === error.pattern),
      message: `the pattern ${error.message}`,
    };
  if (error instanceof DeadlineExceeded) return { path: '', message: `cannot be compiled in time: it ${error.message}` };
  const message = (error as Error).message.replace(/^strict mode: /, '');
  const unknown = /^unknown keyword: "(.*)"/.exec(message)?.[1];
  if (unknown !== undefined)
    return { path: pathOf(schema, (key) => key === unknown), message: `the keyword ${JSON.stringify(unknown)} is not JSON Schema 2020-12` };
  return { path: '', message };
}

/** The JSON pointer of the first member (depth first) that `matches`; '' when none does. */
function pathOf(value: unknown, matches: (key: string, member: unknown) => boolean, path = '', depth = 0): string {
  if (typeof value !== 'object' || value === null || depth > MAX_SCHEMA_DEPTH) return '';
  for (const [key, member] of Object.entries(value)) {
    const here = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (matches(key, member)) return here;
    const inner = pathOf(member, matches, here, depth + 1);
    if (inner !== '') return inner;
  }
  return '';
}

function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  return Object.values(value).some((member) => nestsDeeperThan(member, limit - 1));
}

// What an input (or a schema, against JSON Schema's meta-schema) fails, in the words the API and the CLI document
// (docs/api.md "Agent upload": errors [{path, message}]): Ajv's errors turned into one issue per failing field, its
// path a JSON pointer to the field ("/repo"), its message short ("is required", "must match ^/").
import type { ErrorObject } from 'ajv/dist/2020.js';

export interface SchemaIssue {
  /** JSON pointer: into the schema (schemaProblems) or into the input (the input's problems). */
  path: string;
  message: string;
}

const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * One issue per failing field. The errors of an `anyOf` or `oneOf` alternative are folded into the alternative's
 * own issue, which names what each alternative wanted ("must be integer, or must be true").
 */
export function describeErrors(errors: readonly ErrorObject[]): SchemaIssue[] {
  const alternatives = errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf');
  const within = (error: ErrorObject, alternative: ErrorObject): boolean =>
    error !== alternative && error.schemaPath.startsWith(`${alternative.schemaPath}/`);
  const issues: SchemaIssue[] = [];
  for (const error of errors) {
    if (alternatives.some((alternative) => within(error, alternative))) continue;
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      issues.push({
        path: error.instancePath,
        message: alternativeMessage(
          error,
          errors.filter((inner) => within(inner, error)),
        ),
      });
    } else {
      issues.push(describeError(error));
    }
  }
  return issues;
}

function alternativeMessage(alternative: ErrorObject, inner: readonly ErrorObject[]): string {
  const passing = (alternative.params as { passingSchemas?: unknown }).passingSchemas;
  if (Array.isArray(passing)) return `matches ${passing.length} of the forms it may take; it must match exactly one`;
  // The first error of each alternative, in the order the schema lists them.
  const firstOfEach = new Map<string, ErrorObject>();
  for (const error of inner) {
    const branch = error.schemaPath.slice(alternative.schemaPath.length + 1).split('/')[0]!;
    if (!firstOfEach.has(branch)) firstOfEach.set(branch, error);
  }
  const wanted = [...firstOfEach.values()].map((error) => describeError(error).message);
  return wanted.length > 0 ? wanted.join(', or ') : 'must match one of the forms it may take';
}

/** The keywords that bound a value, a length or a count: their message, `#` standing for the limit. */
const BOUNDS: Readonly<Record<string, string>> = {
  minimum: 'must be at least #',
  maximum: 'must be at most #',
  exclusiveMinimum: 'must be more than #',
  exclusiveMaximum: 'must be less than #',
  // Characters as JSON Schema counts them: code points, not UTF-16 units (Ajv's `unicode` option, on).
  minLength: 'must be at least # characters',
  maxLength: 'must be at most # characters',
  minItems: 'must have at least # items',
  maxItems: 'must have at most # items',
  minProperties: 'must have at least # properties',
  maxProperties: 'must have at most # properties',
};

function describeError(error: ErrorObject): SchemaIssue {
  const path = error.instancePath;
  const params = error.params as Record<string, unknown>;
  const bound = Object.hasOwn(BOUNDS, error.keyword) ? BOUNDS[error.keyword] : undefined;
  if (bound !== undefined) return { path, message: bound.replace('#', String(params.limit)) };
  switch (error.keyword) {
    case 'required':
      return { path: `${path}/${escapePointer(String(params.missingProperty))}`, message: 'is required' };
    case 'additionalProperties':
      return { path: `${path}/${escapePointer(String(params.additionalProperty))}`, message: 'is not a property of this input' };
    case 'type':
      return { path, message: `must be ${String(params.type).split(',').join(' or ')}` };
    case 'pattern':
      return { path, message: `must match ${String(params.pattern)}` };
    case 'enum':
      return { path, message: `must be one of ${(params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}` };
    case 'const':
      return { path, message: `must be ${JSON.stringify(params.allowedValue)}` };
    default:
      return { path, message: error.message ?? `fails ${error.keyword}` };
  }
}

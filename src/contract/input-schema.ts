// The subset of JSON Schema (draft 2020-12) an agent's input_schema may use (docs/api.md "Agent upload", "Input
// checked before the charge"). The service checks a run's input against the bundle's schema before it charges, so a
// keyword it does not know would be a constraint silently not enforced: a schema using one is refused at upload.
// Small and dependency-free on purpose: Ajv would check more, but every keyword it accepts and we did not test
// would be a way to write a schema whose meaning differs between the author's tools and the service.

export interface SchemaIssue {
  /** JSON pointer: into the schema (schemaProblems) or into the input (inputProblems). */
  path: string;
  message: string;
}

const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
/** Keywords that describe and never constrain. `format` is an annotation in 2020-12 unless a validator opts in. */
const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'format']);
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;
const COUNT_KEYWORDS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const;
const KEYWORDS = new Set<string>([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'pattern',
  'anyOf',
  'oneOf',
  ...NUMBER_KEYWORDS,
  ...COUNT_KEYWORDS,
]);
const MAX_DEPTH = 32;

type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const escape = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** What in `schema` lies outside the subset; none for a schema inputProblems enforces whole. */
export function schemaProblems(schema: unknown, path = '', depth = 0): SchemaIssue[] {
  if (!isObject(schema)) return [{ path, message: 'must be a schema object' }];
  if (depth > MAX_DEPTH) return [{ path, message: `nests deeper than ${MAX_DEPTH} levels` }];
  const problems: SchemaIssue[] = [];
  for (const [key, value] of Object.entries(schema)) {
    const here = `${path}/${escape(key)}`;
    if (ANNOTATIONS.has(key)) continue;
    if (!KEYWORDS.has(key)) {
      problems.push({ path: here, message: `the keyword ${JSON.stringify(key)} is not supported (the subset: ${[...KEYWORDS].join(', ')})` });
    } else if (key === 'type') {
      const types = Array.isArray(value) ? value : [value];
      if (types.length === 0 || !types.every((type) => (TYPES as readonly unknown[]).includes(type))) problems.push({ path: here, message: `must be one of ${TYPES.join(', ')}, or an array of them` });
    } else if (key === 'properties') {
      if (!isObject(value)) problems.push({ path: here, message: 'must be an object of schemas' });
      else for (const [name, sub] of Object.entries(value)) problems.push(...schemaProblems(sub, `${here}/${escape(name)}`, depth + 1));
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value !== 'boolean')) {
      problems.push(...schemaProblems(value, here, depth + 1));
    } else if (key === 'anyOf' || key === 'oneOf') {
      if (!Array.isArray(value) || value.length === 0) problems.push({ path: here, message: 'must be a non-empty array of schemas' });
      else value.forEach((sub, index) => problems.push(...schemaProblems(sub, `${here}/${index}`, depth + 1)));
    } else if (key === 'required' && !(Array.isArray(value) && value.every((name) => typeof name === 'string'))) {
      problems.push({ path: here, message: 'must be an array of property names' });
    } else if (key === 'enum' && !Array.isArray(value)) {
      problems.push({ path: here, message: 'must be an array' });
    } else if (key === 'pattern' && !validPattern(value)) {
      problems.push({ path: here, message: 'must be a regular expression (ECMAScript, unicode)' });
    } else if ((NUMBER_KEYWORDS as readonly string[]).includes(key) && typeof value !== 'number') {
      problems.push({ path: here, message: 'must be a number' });
    } else if ((COUNT_KEYWORDS as readonly string[]).includes(key) && !(Number.isInteger(value) && (value as number) >= 0)) {
      problems.push({ path: here, message: 'must be a whole number, 0 or more' });
    }
  }
  return problems;
}

/**
 * Where a run's `input` fails its agent's `schema`, each pointer from the request body (`/input/repo`): what the
 * service's 422 and the node's refusal of a stored input both name. No input is `{}`.
 */
export function runInputProblems(schema: Schema, input: unknown): SchemaIssue[] {
  return inputProblems(schema, input ?? {}).map((problem) => ({ path: `/input${problem.path}`, message: problem.message }));
}

/** Where `value` fails `schema` (one checked by schemaProblems), each with the JSON pointer of the failing field. */
export function inputProblems(schema: Schema, value: unknown, path = ''): SchemaIssue[] {
  const fail = (message: string): SchemaIssue[] => [{ path, message }];
  if (schema.type !== undefined) {
    const types = (Array.isArray(schema.type) ? schema.type : [schema.type]) as string[];
    if (!types.some((type) => hasType(value, type))) return fail(`must be ${types.join(' or ')}`);
  }
  if (schema.const !== undefined && !sameJson(value, schema.const)) return fail(`must be ${JSON.stringify(schema.const)}`);
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => sameJson(value, option))) {
    return fail(`must be one of ${schema.enum.map((option) => JSON.stringify(option)).join(', ')}`);
  }
  const alternatives = alternativeProblems(schema, value, path);
  if (alternatives.length > 0) return alternatives;
  const problems: SchemaIssue[] = [];
  const num = (key: string): number | undefined => (typeof schema[key] === 'number' ? (schema[key] as number) : undefined);
  if (typeof value === 'number') {
    if (num('minimum') !== undefined && value < num('minimum')!) problems.push({ path, message: `must be at least ${num('minimum')}` });
    if (num('maximum') !== undefined && value > num('maximum')!) problems.push({ path, message: `must be at most ${num('maximum')}` });
    if (num('exclusiveMinimum') !== undefined && value <= num('exclusiveMinimum')!) problems.push({ path, message: `must be more than ${num('exclusiveMinimum')}` });
    if (num('exclusiveMaximum') !== undefined && value >= num('exclusiveMaximum')!) problems.push({ path, message: `must be less than ${num('exclusiveMaximum')}` });
  }
  if (typeof value === 'string') {
    // Characters as JSON Schema counts them: code points, not UTF-16 units.
    const length = [...value].length;
    if (num('minLength') !== undefined && length < num('minLength')!) problems.push({ path, message: `must be at least ${num('minLength')} characters` });
    if (num('maxLength') !== undefined && length > num('maxLength')!) problems.push({ path, message: `must be at most ${num('maxLength')} characters` });
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) problems.push({ path, message: `must match ${schema.pattern}` });
  }
  if (Array.isArray(value)) {
    if (num('minItems') !== undefined && value.length < num('minItems')!) problems.push({ path, message: `must have at least ${num('minItems')} items` });
    if (num('maxItems') !== undefined && value.length > num('maxItems')!) problems.push({ path, message: `must have at most ${num('maxItems')} items` });
    if (isObject(schema.items)) value.forEach((item, index) => problems.push(...inputProblems(schema.items as Schema, item, `${path}/${index}`)));
  }
  if (isObject(value)) problems.push(...objectProblems(schema, value, path, num));
  return problems;
}

/** anyOf: at least one alternative holds; oneOf: exactly one does. A failure names what each alternative wanted. */
function alternativeProblems(schema: Schema, value: unknown, path: string): SchemaIssue[] {
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (!Array.isArray(options)) continue;
    const outcomes = options.map((option) => inputProblems(option as Schema, value, path));
    const holding = outcomes.filter((problems) => problems.length === 0).length;
    if (holding === 0) return [{ path, message: outcomes.map((problems) => problems[0]!.message).join(', or ') }];
    if (key === 'oneOf' && holding > 1) return [{ path, message: `matches ${holding} of the forms it may take; it must match exactly one` }];
  }
  return [];
}

function objectProblems(schema: Schema, value: Record<string, unknown>, path: string, num: (key: string) => number | undefined): SchemaIssue[] {
  const problems: SchemaIssue[] = [];
  const keys = Object.keys(value);
  if (num('minProperties') !== undefined && keys.length < num('minProperties')!) problems.push({ path, message: `must have at least ${num('minProperties')} properties` });
  if (num('maxProperties') !== undefined && keys.length > num('maxProperties')!) problems.push({ path, message: `must have at most ${num('maxProperties')} properties` });
  for (const name of Array.isArray(schema.required) ? (schema.required as string[]) : []) {
    if (!Object.hasOwn(value, name)) problems.push({ path: `${path}/${escape(name)}`, message: 'is required' });
  }
  const properties = isObject(schema.properties) ? schema.properties : {};
  for (const key of keys) {
    const here = `${path}/${escape(key)}`;
    if (Object.hasOwn(properties, key)) problems.push(...inputProblems(properties[key] as Schema, value[key], here));
    else if (schema.additionalProperties === false) problems.push({ path: here, message: 'is not a property of this input' });
    else if (isObject(schema.additionalProperties)) problems.push(...inputProblems(schema.additionalProperties, value[key], here));
  }
  return problems;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

/** JSON equality (enum, const): key order does not matter. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, index) => sameJson(item, b[index]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && sameJson(a[key], b[key]));
  }
  return false;
}

function validPattern(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    new RegExp(value, 'u');
    return true;
  } catch {
    return false;
  }
}

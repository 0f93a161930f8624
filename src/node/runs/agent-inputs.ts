// The inputs an agent cannot run without, read from its manifest's input_schema (JSON Schema 2020-12,
// docs/sections/agent-upload.md "Agent bundle"): what the wizard asks a person for, or names as --input flags when
// nobody can be asked. A run without them is refused by the agent and refunded: a first run that proves nothing.

/** One input a person is asked for: its property name and what the schema says it is. */
export interface InputField {
  name: string;
  /** The schema's description of the property; its name when it has none. */
  description: string;
}

type PropertySchema = { description?: unknown; type?: unknown };

/**
 * The inputs still missing once `given` are set: each `required` property, then, when `minProperties` asks for more
 * properties than that, the first string properties in the schema's order (the skills tutor needs a question or a
 * quiz: a question is what a person can type). Only strings: an --input value, typed or given, is a string.
 */
export function missingInputs(schema: Record<string, unknown>, given: readonly string[]): InputField[] {
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, PropertySchema>) : {};
  const required = Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : [];
  const have = new Set(given);
  const missing = required.filter((name) => !have.has(name));
  const minProperties = typeof schema.minProperties === 'number' ? schema.minProperties : 0;
  let shortfall = minProperties - new Set([...given, ...required]).size;
  for (const [name, property] of Object.entries(properties)) {
    if (shortfall <= 0) break;
    if (have.has(name) || required.includes(name) || property?.type !== 'string') continue;
    missing.push(name);
    shortfall -= 1;
  }
  return missing.map((name) => ({ name, description: describe(name, properties[name]) }));
}

/**
 * An input a first run can start from: each input the schema cannot run without (missingInputs), valued by the
 * schema's own `examples` (its first), else its `default`, else `<name>` for the person to fill in.
 */
export function exampleInput(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, { examples?: unknown; default?: unknown }>) : {};
  const example: Record<string, unknown> = {};
  for (const { name } of missingInputs(schema, [])) {
    const property = properties[name];
    example[name] =
      Array.isArray(property?.examples) && property.examples.length > 0 ? property.examples[0] : (property?.default ?? `<${name}>`);
  }
  return example;
}

/** One top-level input as `agents show` lists it: what it takes (its type; required, or its default) and what it is. */
export interface InputFieldLine {
  name: string;
  kind: string;
  description: string;
}

/** Each top-level property of the schema, in its order. */
export function inputFieldsOf(schema: Record<string, unknown>): InputFieldLine[] {
  const properties = (isObject(schema.properties) ? schema.properties : {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(properties).map(([name, property]) => {
    const need = required.has(name) ? 'required' : 'default' in property ? `default ${JSON.stringify(property.default)}` : 'optional';
    const description = typeof property?.description === 'string' ? property.description : '';
    return { name, kind: `${typesOf(property)}, ${need}`, description };
  });
}

/** A property's type as a person reads it: `string`, `one of "a", "b"`, `integer or true`. */
function typesOf(property: unknown): string {
  if (!isObject(property)) return 'any';
  if (Array.isArray(property.enum)) return `one of ${property.enum.map((value) => JSON.stringify(value)).join(', ')}`;
  if ('const' in property) return JSON.stringify(property.const);
  if (typeof property.type === 'string') return property.type;
  if (Array.isArray(property.type)) return property.type.join(' or ');
  const branches = Array.isArray(property.oneOf) ? property.oneOf : Array.isArray(property.anyOf) ? property.anyOf : undefined;
  if (branches !== undefined) return branches.map((branch) => typesOf(branch)).join(' or ');
  return 'any';
}

/** How the flag that gives a field reads in a usage error: `--input question=<value>`. */
export function inputFlag(field: InputField): string {
  return `--input ${field.name}=<value>`;
}

/** ` --input question=…` for each input given: a command to repeat the run, without the values (the person's to type). */
export function inputFlagsOf(input: Record<string, unknown> | undefined): string {
  return Object.keys(input ?? {})
    .map((name) => ` --input ${name}=…`)
    .join('');
}

function describe(name: string, property: PropertySchema | undefined): string {
  return typeof property?.description === 'string' && property.description.trim() !== '' ? property.description.trim() : name;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A `--input key=value` value as the agent's schema wants it, as `gh api -F` reads numbers and booleans, but only
 * where the field takes one (docs/api.md "The node's client: decisions", "Input"): a field that takes a string keeps
 * the text as it is ("007" stays "007"); one that takes a number, an integer or a boolean, and no string, gets the
 * number or the boolean the text spells (`quiz=2` is 2, `quiz=true` is true). Anything else stays text, for the
 * schema's check to name. No schema (an agent without a bundle here): text, as before.
 */
export function typedInputValue(schema: Record<string, unknown> | undefined, name: string, text: string): unknown {
  const properties = isObject(schema?.properties) ? (schema!.properties as Record<string, unknown>) : {};
  const types = acceptedTypes(properties[name], 0);
  if (types.size === 0 || types.has('string')) return text;
  if ((types.has('number') || types.has('integer')) && /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(text)) {
    const number = Number(text);
    if (types.has('number') || Number.isInteger(number)) return number;
  }
  if (types.has('boolean') && (text === 'true' || text === 'false')) return text === 'true';
  if (types.has('null') && text === 'null') return null;
  return text;
}

/** The JSON types a property's schema admits: its type, const and enum, and those of its oneOf/anyOf branches. */
function acceptedTypes(property: unknown, depth: number): Set<string> {
  const types = new Set<string>();
  if (!isObject(property) || depth > 8) return types;
  const schema = property as Record<string, unknown>;
  for (const type of Array.isArray(schema.type) ? schema.type : [schema.type]) if (typeof type === 'string') types.add(type);
  const values = [...('const' in schema ? [schema.const] : []), ...(Array.isArray(schema.enum) ? schema.enum : [])];
  for (const value of values) types.add(value === null ? 'null' : typeof value === 'number' ? 'number' : typeof value);
  for (const branch of [...(Array.isArray(schema.oneOf) ? schema.oneOf : []), ...(Array.isArray(schema.anyOf) ? schema.anyOf : [])]) {
    for (const type of acceptedTypes(branch, depth + 1)) types.add(type);
  }
  return types;
}

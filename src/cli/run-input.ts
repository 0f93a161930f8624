// The input object of a run, as `run` takes it (and `register`, for the input runs start from, and the wizard):
// `--input key=value`, repeated, sets top-level fields, a number or a boolean where the agent's schema wants one
// (typedInputValue); `--input-file f.json` gives the whole object (for lists, nested objects). Both together: the
// file first, then the pairs over it. Loaded when a command acts (node:fs stays off --help's path).
import { readFileSync } from 'node:fs';
import { SvcError } from '../contract/errors.js';
import { typedInputValue } from '../node/runs/agent-inputs.js';

export const MAX_INPUT_BYTES = 48 * 1024;

/** `schema`: the agent's input_schema as this node has it (undefined: none here, and the pairs stay text). */
export function runInput(
  options: { input?: string[]; inputFile?: string },
  schema?: Record<string, unknown>,
): Record<string, unknown> | undefined {
  let input: Record<string, unknown> | undefined;
  if (options.inputFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.inputFile === '-' ? 0 : options.inputFile, 'utf8');
    } catch (error) {
      throw new SvcError('usage', `cannot read the input file ${options.inputFile} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (Buffer.byteLength(text) > MAX_INPUT_BYTES) throw new SvcError('usage', `the input file is over ${MAX_INPUT_BYTES / 1024} KiB`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new SvcError('usage', `the input file is not JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new SvcError('usage', 'the input file must hold one JSON object');
    input = parsed as Record<string, unknown>;
  }
  for (const pair of options.input ?? []) {
    const separator = pair.indexOf('=');
    const name = pair.slice(0, separator);
    input = { ...input, [name]: typedInputValue(schema, name, pair.slice(separator + 1)) };
  }
  return input;
}

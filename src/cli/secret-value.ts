// A secret's value as `swarm-node secret set` takes it: from --value-file (a file, or - for standard input), else
// typed at a hidden prompt on a terminal, else read from standard input; never an argument (ps shows arguments).
// One line ending at the end is dropped, as `echo` and editors add one that is no part of an API key.
import { readFileSync } from 'node:fs';
import { SvcError } from '../contract/errors.js';
import type { CommandContext } from './context.js';

export async function readSecretValue(ctx: CommandContext, name: string, valueFile: string | undefined): Promise<string> {
  let text: string;
  if (valueFile !== undefined && valueFile !== '-') {
    try {
      text = readFileSync(valueFile, 'utf8');
    } catch (error) {
      throw new SvcError('usage', `cannot read ${valueFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  } else if (valueFile === undefined && ctx.canPrompt()) {
    const { password } = await import('@inquirer/prompts');
    text = await password({ message: `Value of ${name} (not shown):`, mask: false }, { output: process.stderr });
  } else {
    if (process.stdin.isTTY)
      throw new SvcError('usage', 'give the value on standard input, or with --value-file <file>', {
        remedy: `printf %s "$VALUE" | swarm-node secret set ${name}`,
      });
    text = readFileSync(0, 'utf8');
  }
  return text.replace(/\r?\n$/, '');
}

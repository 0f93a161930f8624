// What removes something for good asks first in a terminal (no by default), and off a terminal needs --yes, whose
// remedy is the command again with it: `--yes` for what destroys data, so a script never blocks on a question.
import { SvcError } from '../contract/errors.js';
import type { CommandContext } from './context.js';

export async function confirmRemoval(
  ctx: CommandContext,
  given: { yes: boolean | undefined; what: string; question: string; again: string },
): Promise<void> {
  if (given.yes === true) return;
  if (!ctx.canPrompt())
    throw new SvcError('usage', `removing ${given.what} cannot be undone, and there is no terminal to confirm it on`, {
      remedy: `Add --yes: ${given.again} --yes`,
    });
  const { confirm } = await import('@inquirer/prompts');
  if (!(await confirm({ message: given.question, default: false }, { output: process.stderr })))
    throw new SvcError('failed', 'not confirmed: nothing was removed');
}

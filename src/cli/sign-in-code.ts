// Where a sign-in's mailed code comes from (login, the wizard, a step-up): --code-file (a file or a named pipe, read
// once the code was sent), a prompt in a terminal, or else standard input. Never an argument: a code on a command
// line is seen in `ps` for as long as it works.
import { readFileSync } from 'node:fs';
import { SvcError } from '../contract/errors.js';
import type { PendingSignIn, ReadCode } from '../node/identity/session.js';
import type { CommandContext } from './context.js';

const CODE_SHAPE = /^\s*\d{4}[\s-]?\d{4}\s*$/;

export function codeReader(ctx: CommandContext, codeFile: string | undefined): ReadCode {
  return async (pending: PendingSignIn, sentNow: boolean, wrong?: { attemptsLeft: number }) => {
    const reference = `reference ${pending.challenge_id.slice(0, 8)}`;
    if (wrong !== undefined)
      ctx.output.warn(
        `that is not the code of the mail (${reference}): ${wrong.attemptsLeft} ${wrong.attemptsLeft === 1 ? 'try' : 'tries'} left; type it again`,
      );
    else
      ctx.output.info(
        sentNow
          ? `Sent a sign-in code to ${pending.email} (${reference}); it works until ${pending.expires_at}.`
          : `Using the sign-in code sent to ${pending.email} earlier (${reference}; it works until ${pending.expires_at}).`,
      );
    if (codeFile !== undefined) return codeFrom(readText(codeFile), codeFile);
    if (ctx.canPrompt()) {
      const { input } = await import('@inquirer/prompts');
      const answer = await input(
        {
          message: `Code from the mail to ${pending.email}:`,
          validate: (value) => CODE_SHAPE.test(value) || 'Type the 8 digits of the mail, such as 1234-5678.',
        },
        { output: process.stderr },
      );
      return answer.trim();
    }
    if (process.stdin.isTTY)
      throw new SvcError('not_a_terminal', 'the code cannot be asked for under --json', {
        remedy: 'Put the code in a file and name it with --code-file, or leave --json out to be asked for it.',
      });
    return codeFrom(readText(0), 'standard input');
  };
}

function readText(from: string | 0): string {
  try {
    return readFileSync(from, 'utf8');
  } catch (error) {
    throw new SvcError(
      'usage',
      `cannot read the code from ${from === 0 ? 'standard input' : from}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

function codeFrom(text: string, from: string): string {
  const line = text.split('\n').find((each) => each.trim() !== '') ?? '';
  if (!CODE_SHAPE.test(line)) {
    throw new SvcError('usage', `${from} does not hold a sign-in code (8 digits, such as 1234-5678)`, {
      remedy: 'Put the code of the newest sign-in mail in it, alone on its first line.',
    });
  }
  return line.trim();
}

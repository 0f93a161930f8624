// Every remedy the CLI prints is a command that works as printed (docs/api.md "The node's client: decisions",
// "Remedies"). Two halves:
// - every remedy written in the source (remedy-texts.ts walks it: a new one is covered without editing this file)
//   names no placeholder a person would have to replace, and each swarm-node command in it parses as printed;
// - the remedies of the failures a person meets are run as printed, with the built CLI against a real svc-api (in a
//   pseudo-terminal where they ask something), and do what they say.
import { CommanderError, type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandTable } from '../../src/cli/context.js';
import { commandsIn } from '../../src/cli/invocation.js';
import { buildProgram } from '../../src/cli/program.js';
import { HOLE, remedyTexts } from './remedy-texts.js';

/** The program with every action a no-op: parsing is all that runs. */
function parsingProgram(): Command {
  const program = buildProgram();
  const quiet = (command: Command): void => {
    command.action(() => undefined);
    command.commands.forEach(quiet);
  };
  quiet(program);
  return program;
}

/** Why `args` does not parse as swarm-node's arguments; undefined when it does. */
async function parseProblem(args: string[]): Promise<string | undefined> {
  try {
    await parsingProgram().parseAsync(args, { from: 'user' });
    return undefined;
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // A value only the running code has may not be one of an option's choices here: it is, there.
    if (error.code === 'commander.invalidArgument' && error.message.includes(HOLE)) return undefined;
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return undefined;
    return error.message;
  }
}

describe('every remedy in the source', () => {
  const texts = remedyTexts();
  const commands = commandTable(buildProgram().commands[0]!);

  it('the walk finds the remedies of the error table, of the node and of the CLI', () => {
    const where = texts.map((text) => text.where);
    expect(where).toContain('ERROR_CODES.not_signed_in');
    expect(where.some((each) => each.startsWith('src/node/identity/credentials.ts'))).toBe(true);
    expect(where.some((each) => each.startsWith('src/cli/commands/register.ts'))).toBe(true);
    expect(where.some((each) => each.startsWith('src/node/wizard/run-wizard.ts'))).toBe(true);
    expect(texts.length).toBeGreaterThan(100);
  });

  it('names no placeholder (<file>, <email>): a person would have to know what to put there', () => {
    const withPlaceholders = texts.filter((each) => /<[a-z][a-z_ -]*>/i.test(each.text)).map((each) => `${each.where}: ${each.text}`);
    expect(withPlaceholders).toEqual([]);
  });

  it('each swarm-node command in a remedy parses as printed', async () => {
    const problems: string[] = [];
    for (const each of texts) {
      for (const command of commandsIn(each.text, commands)) {
        const problem = await parseProblem(command.args);
        if (problem !== undefined) problems.push(`${each.where}: ${command.text}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

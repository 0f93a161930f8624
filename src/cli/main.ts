// swarm-node: runs the command tree of program.ts. This file is the one exit boundary: commands throw typed errors
// and nothing else calls process.exit.
import { CommanderError, type Command } from 'commander';
import { ERROR_CODES, SvcError, isErrorCode } from '../contract/errors.js';
import { closeContexts, commandOwnsSignals, exitWhenDoneRequested, lastContext } from './context.js';
import { EXIT_CODES, exitCodeFor } from './exit-codes.js';
import { Output, loadStyles } from './output.js';
import { buildProgram } from './program.js';

export async function runCli(argv: string[]): Promise<number> {
  // A reader that stops early (`swarm-node runs | head -1`) is not a failure of ours: the output it wanted is out.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(EXIT_CODES.ok);
    });
  }
  const program = buildProgram();
  const interrupt = (): void => {
    // A command that owns the signal (the daemon: finish in-flight runs, exit 0) stops by itself.
    if (commandOwnsSignals()) return;
    // What the command leaves running (a billed run, a session) is said first, as its error: under --json the one
    // document on stdout.
    const report = lastContext()?.interruptReport();
    if (report !== undefined) lastContext()!.output.error(report);
    // Ctrl+C: whatever runs stops here; local writes are transactions, so nothing is half-written.
    void closeContexts({ abort: true }).finally(() => process.exit(EXIT_CODES.interrupted));
  };
  // Ctrl+C reaches us as the terminal's SIGINT: nothing of ours reads stdin in raw mode outside a prompt, and a
  // prompt rejects instead (ExitPromptError, below). Both end here or in the catch: exit 130 after the cleanup.
  process.on('SIGINT', interrupt);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError && (error.exitCode === 0 || error.code === 'commander.helpDisplayed')) return 0;
    await loadStyles();
    const context = lastContext();
    // The command's own output, when it got that far: it knows whether a result was written (output.ts error()).
    const output = context?.output ?? new Output({ json: argv.includes('--json'), color: !argv.includes('--no-color') });
    const commandPath = commandPathOf(program, argv.slice(2));
    const found = inCommandLineTerms(toSvcError(error, commandPath), commandPath);
    const failure = context === undefined ? found : localized(found, context.enrollCommand());
    output.error(failure);
    return exitCodeFor(failure.code);
  } finally {
    process.off('SIGINT', interrupt);
    await closeContexts();
  }
}

function toSvcError(error: unknown, commandPath: string[]): SvcError {
  if (error instanceof SvcError) return error;
  if (error instanceof CommanderError) {
    return new SvcError('usage', error.message.replace(/^error: /, ''), {
      remedy: `See its help: swarm-node ${[...commandPath, '--help'].join(' ')}`,
    });
  }
  if (error instanceof Error && error.name === 'ExitPromptError') return new SvcError('interrupted', 'interrupted');
  const code = (error as { code?: unknown }).code;
  if (isErrorCode(code)) return new SvcError(code, (error as Error).message);
  // A bug, not a user error: say so plainly, without a stack trace (SWARM_NODE_DEBUG=1 shows it).
  if (process.env.SWARM_NODE_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  return new SvcError('failed', `unexpected failure: ${(error as Error)?.message ?? String(error)}`, {
    remedy: 'Run again with SWARM_NODE_DEBUG=1 for details, and report it.',
  });
}

/**
 * A request the service refused, in the words of the command line: its remedy speaks of a request body, which the
 * person never wrote; they gave options and arguments. A command that knows which flag filled which field says so
 * in the message as well (flag-terms.ts).
 */
function inCommandLineTerms(error: SvcError, commandPath: string[]): SvcError {
  if (error.code !== 'invalid_request' || error.remedy !== ERROR_CODES.invalid_request.remedy) return error;
  return error.withRemedy(
    `Correct what the message names and run the command again (its options: swarm-node ${[...commandPath, '--help'].join(' ')}).`,
  );
}

/**
 * `error` as the home of the command acts on it: a node the service removed is enrolled anew by that home's own
 * command (install for an installed node, enroll for a home), which the service's remedy cannot tell.
 */
function localized(error: SvcError, enrollCommand: string): SvcError {
  // An ephemeral node that retired itself ran as asked: its own remedy says so.
  if (error.code !== 'node_removed' || error.extensions.retired === true) return error;
  return error.withRemedy(
    `This node was removed from your nodes (by you, by itself, or after it was offline longer than the service keeps offline nodes); its credential no longer works. To serve again, enroll it anew, signed in: ${enrollCommand} --reenroll`,
  );
}

/** The words of argv that name a command of the program (`agent upload`), in order, the options left out. */
function commandPathOf(program: Command, args: string[]): string[] {
  const path: string[] = [];
  let at = program;
  for (const word of args) {
    const next = at.commands.find((command) => command.name() === word || command.aliases().includes(word));
    if (next === undefined) continue;
    path.push(next.name());
    at = next;
  }
  return path;
}

const exitCode = await runCli(process.argv);
// A command that left calls in flight on purpose (the daemon past its drain bound) is not kept alive by them.
if (exitWhenDoneRequested()) process.exit(exitCode);
process.exitCode = exitCode;

// swarm-node: the program. Commands are defined here (cheap: commander only); each loads its work on first use.
// This file is the one exit boundary: commands throw typed errors and nothing else calls process.exit.
import { Command, CommanderError } from 'commander';
import { SvcError, isErrorCode } from '../contract/errors.js';
import { activateCommand } from './commands/activate.js';
import { agentsCommand } from './commands/agents.js';
import { configCommand } from './commands/config.js';
import { daemonCommand } from './commands/daemon.js';
import { docsCommand } from './commands/docs.js';
import { doctorCommand } from './commands/doctor.js';
import { installCommand } from './commands/install.js';
import { listCommand } from './commands/list.js';
import { loginCommand } from './commands/login.js';
import { logoutCommand } from './commands/logout.js';
import { registerCommand } from './commands/register.js';
import { runCommand } from './commands/run.js';
import { runsCommand } from './commands/runs.js';
import { statusCommand } from './commands/status.js';
import { unregisterCommand } from './commands/unregister.js';
import { uninstallCommand } from './commands/uninstall.js';
import { upgradeCommand } from './commands/upgrade.js';
import { walletCommand } from './commands/wallet.js';
import { whoamiCommand } from './commands/whoami.js';
import { wizardCommand } from './commands/wizard.js';
import { closeContexts } from './context.js';
import { EXIT_CODES, exitCodeFor } from './exit-codes.js';
import { Output, loadStyles } from './output.js';

declare const SVC_VERSION: string | undefined;
const VERSION = typeof SVC_VERSION === 'string' ? SVC_VERSION : 'dev';

export function buildProgram(): Command {
  const program = new Command('swarm-node')
    .description('Run private svc agent nodes on bare metal: install, register agents, run them, billed per run.')
    .version(VERSION, '-v, --version', 'print the version')
    .option('--json', 'print one JSON document on stdout; human text goes to stderr')
    .option('--no-color', 'no colours (also: NO_COLOR=1)')
    .option('--base-url <url>', 'the service base URL (env SVC_BASE_URL)')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 failure, 2 usage, 3 insufficient balance, 4 not signed in or token invalid/expired,
            5 not found, 6 service unreachable, 7 payment not confirmed yet, 130 interrupted.

Example:
  $ swarm-node agents
  $ swarm-node --json status`,
    );

  program.addCommand(activateCommand());
  program.addCommand(loginCommand());
  program.addCommand(logoutCommand());
  program.addCommand(whoamiCommand());
  program.addCommand(agentsCommand());
  program.addCommand(registerCommand());
  program.addCommand(unregisterCommand());
  program.addCommand(listCommand());
  program.addCommand(runCommand());
  program.addCommand(runsCommand());
  program.addCommand(wizardCommand());
  program.addCommand(walletCommand());
  program.addCommand(docsCommand());
  program.addCommand(statusCommand());
  program.addCommand(daemonCommand());
  program.addCommand(configCommand());
  program.addCommand(installCommand());
  program.addCommand(upgradeCommand());
  program.addCommand(uninstallCommand());
  program.addCommand(doctorCommand());
  // Styles load when a command is about to act, so --help and --version never load them.
  program.hook('preAction', loadStyles);

  // Every subcommand reports usage errors through our boundary (so --json gets a JSON error), not by exiting.
  const quiet = { writeErr: () => undefined, outputError: () => undefined };
  const applyToTree = (command: Command): void => {
    command.exitOverride().configureOutput(quiet);
    command.commands.forEach(applyToTree);
  };
  applyToTree(program);
  return program;
}

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
    const output = new Output({ json: argv.includes('--json'), color: !argv.includes('--no-color') });
    const failure = toSvcError(error);
    output.error(failure);
    return exitCodeFor(failure.code);
  } finally {
    process.off('SIGINT', interrupt);
    await closeContexts();
  }
}

function toSvcError(error: unknown): SvcError {
  if (error instanceof SvcError) return error;
  if (error instanceof CommanderError) {
    return new SvcError('usage', error.message.replace(/^error: /, ''), { remedy: 'See swarm-node --help, or <command> --help.' });
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

process.exitCode = await runCli(process.argv);

// The swarm-node command tree: every command and its options, help and exit behaviour. Cheap to build (commander
// only): each command loads its work on first use. main.ts runs it; tests walk it.
import { Command } from 'commander';
import { activateCommand } from './commands/activate.js';
import { agentCommand } from './commands/agent.js';
import { agentExecCommand } from './commands/agent-exec.js';
import { agentsCommand } from './commands/agents.js';
import { configCommand } from './commands/config.js';
import { credentialCommand } from './commands/credential.js';
import { daemonCommand } from './commands/daemon.js';
import { docsCommand } from './commands/docs.js';
import { doctorCommand } from './commands/doctor.js';
import { enrollCommand } from './commands/enroll.js';
import { installCommand } from './commands/install.js';
import { labelsCommand } from './commands/labels.js';
import { listCommand } from './commands/list.js';
import { loginCommand } from './commands/login.js';
import { logsCommand } from './commands/logs.js';
import { logoutCommand } from './commands/logout.js';
import { auditCommand } from './commands/audit.js';
import { budgetCommand } from './commands/budget.js';
import { secretCommand } from './commands/secret.js';
import { usageCommand } from './commands/usage.js';
import { webhookCommand } from './commands/webhook.js';
import { scheduleCommand } from './commands/schedule.js';
import { nodesCommand } from './commands/nodes.js';
import { artifactsCommand } from './commands/artifacts.js';
import { registerCommand } from './commands/register.js';
import { runCommand } from './commands/run.js';
import { runsCommand } from './commands/runs.js';
import { cancelCommand } from './commands/cancel.js';
import { statusCommand } from './commands/status.js';
import { unregisterCommand } from './commands/unregister.js';
import { uninstallCommand } from './commands/uninstall.js';
import { upgradeCommand } from './commands/upgrade.js';
import { walletCommand } from './commands/wallet.js';
import { whoamiCommand } from './commands/whoami.js';
import { wizardCommand } from './commands/wizard.js';
import { loadStyles } from './output.js';
import { VERSION } from './version.js';

export function buildProgram(): Command {
  const program = new Command('swarm-node')
    .description('Run private svc agent nodes on bare metal: install, register agents, run them, billed per run.')
    .version(VERSION, '-v, --version', 'print the version')
    .option('--json', 'print one JSON document on stdout; human text goes to stderr')
    .option('--no-color', 'no colours (also: NO_COLOR=1)')
    .option('--base-url <url>', 'the service base URL (env SVC_BASE_URL)')
    .option('--node <name>', 'act on the node of this name on this host (installed with install --name; env SWARM_NODE_NAME)')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .showSuggestionAfterError(true)
    .addHelpText(
      'after',
      `
Exit codes: 0 ok, 1 failure, 2 usage, 3 insufficient balance, 4 not signed in, token invalid/expired, a
            sign-in code refused, a recent sign-in needed, or not an enrolled node, 5 not found, 6 service
            unreachable, 7 payment not confirmed yet, 8 this node was removed from your nodes (enroll it anew),
            9 the daemon stopped for an update it staged, 10 run --fail-on: the agent's status reached the
            one named, 11 a budget is spent (wait for its reset, or raise it), 12 upgrade --check: a newer
            release is available, 130 interrupted.

Example:
  $ swarm-node agents
  $ swarm-node --json status
  $ swarm-node --node gpu status`,
    );

  program.addCommand(activateCommand());
  program.addCommand(loginCommand());
  program.addCommand(logoutCommand());
  program.addCommand(whoamiCommand());
  program.addCommand(auditCommand());
  program.addCommand(agentsCommand());
  program.addCommand(agentCommand());
  program.addCommand(registerCommand());
  program.addCommand(unregisterCommand());
  program.addCommand(listCommand());
  program.addCommand(runCommand());
  program.addCommand(runsCommand());
  program.addCommand(cancelCommand());
  program.addCommand(logsCommand());
  program.addCommand(artifactsCommand());
  program.addCommand(wizardCommand());
  program.addCommand(walletCommand());
  program.addCommand(usageCommand());
  program.addCommand(budgetCommand());
  program.addCommand(secretCommand());
  program.addCommand(webhookCommand());
  program.addCommand(scheduleCommand());
  program.addCommand(docsCommand());
  program.addCommand(statusCommand());
  program.addCommand(daemonCommand());
  program.addCommand(configCommand());
  program.addCommand(installCommand());
  program.addCommand(enrollCommand());
  program.addCommand(nodesCommand());
  program.addCommand(labelsCommand());
  program.addCommand(credentialCommand());
  program.addCommand(upgradeCommand());
  program.addCommand(uninstallCommand());
  program.addCommand(doctorCommand());
  // systemd's, not people's: hidden from the command list.
  program.addCommand(agentExecCommand(), { hidden: true });
  // Styles load when a command is about to act, so --help and --version never load them.
  program.hook('preAction', loadStyles);

  // Every subcommand reports usage errors through our boundary (so --json gets a JSON error), not by exiting, and
  // shows the program's help layout: commands made with `new Command` inherit none of it, so without this their
  // --help would not list --json, --base-url and --no-color.
  // Help is at most HELP_WIDTH wide on a wide terminal too (narrower ones wrap it to their width): the same text
  // everywhere, which bin/swarm-node.js prints for `--help` alone without loading the program.
  const output = {
    writeErr: () => undefined,
    outputError: () => undefined,
    getOutHelpWidth: () => helpWidthOf(process.stdout),
    getErrHelpWidth: () => helpWidthOf(process.stderr),
  };
  const help = program.configureHelp();
  const applyToTree = (command: Command): void => {
    command.exitOverride().configureOutput(output).configureHelp(help);
    command.commands.forEach(applyToTree);
  };
  applyToTree(program);
  return program;
}

/** Commander's width on a pipe, and the most help uses on a terminal. */
export const HELP_WIDTH = 80;

function helpWidthOf(stream: NodeJS.WriteStream): number {
  // A terminal that reports 0 columns (a serial console, `script`) does not know its width.
  return stream.isTTY && stream.columns > 0 ? Math.min(stream.columns, HELP_WIDTH) : HELP_WIDTH;
}

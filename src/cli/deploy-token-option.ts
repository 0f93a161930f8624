// The deploy token on the command line (install, enroll): a file or SVC_DEPLOY_TOKEN, never an argument.
import { Option, type Command } from 'commander';
import { SvcError } from '../contract/errors.js';

export interface DeployTokenFlags {
  deployTokenFile?: string;
  deployToken?: string;
}

export function addDeployTokenOptions(command: Command): Command {
  return (
    command
      .option('--deploy-token-file <file>', 'file holding the deploy token ("-" for stdin); or set SVC_DEPLOY_TOKEN')
      // Caught to say why, not to accept it: a token in argv is visible to every user in `ps`.
      .addOption(new Option('--deploy-token <token>').hideHelp())
  );
}

export function refuseTokenArgument(flags: DeployTokenFlags): void {
  if (flags.deployToken !== undefined) {
    throw new SvcError('usage', 'the deploy token is never taken as an argument (other users can read it in ps)', {
      remedy:
        'Put it in a file only you can read and name the file with --deploy-token-file, or put it in the environment as SVC_DEPLOY_TOKEN.',
    });
  }
}

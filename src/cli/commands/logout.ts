// swarm-node logout: forget the stored JWT; the node's enrollment (from install) stays.
import { Command } from 'commander';
import { contextFor } from '../context.js';

export function logoutCommand(): Command {
  return new Command('logout')
    .description('forget the stored JWT (the node stays enrolled)')
    .addHelpText('after', '\nExample:\n  $ swarm-node logout')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { logout } = await import('../../node/identity/session.js');
      const result = logout(ctx.paths.credentialsFile);
      ctx.output.result(result, (r) => (r.signed_out ? `Signed out ${r.sub}.` : 'Not signed in; nothing to forget.'));
    });
}

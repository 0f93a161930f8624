// swarm-node logout: revoke the stored JWT at the service and forget it (docs/api.md "Revocation and sessions");
// --everywhere revokes every token of the user. The node's enrollment (from install) stays.
import { Command } from 'commander';
import { contextFor } from '../context.js';

interface LogoutOptions {
  everywhere?: boolean;
  local?: boolean;
}

export function logoutCommand(): Command {
  return new Command('logout')
    .description('revoke the stored JWT at the service and forget it (the node stays enrolled)')
    .option('--everywhere', 'revoke every token of yours, on every machine and browser, issued before now')
    .option('--local', 'only forget it here, without telling the service (it stays valid until it expires)')
    .addHelpText(
      'after',
      `
A token copied from this disk stops working on every instance of the service within a second; wallet sessions
opened with it end too. When the service cannot be reached, nothing is forgotten (exit 6): a token deleted here
but valid there is what someone who copied it would want. --everywhere is the answer to a token you think leaked.

Example:
  $ swarm-node logout
  $ swarm-node logout --everywhere`,
    )
    .action(async (options: LogoutOptions, command: Command) => {
      const ctx = contextFor(command);
      const { logout } = await import('../../node/identity/session.js');
      const deps = { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile };
      const result = await logout(deps, { everywhere: options.everywhere === true, localOnly: options.local === true });
      ctx.output.result(result, (r) => {
        if (!r.signed_out) return 'Not signed in; nothing to forget.';
        if (r.local_only) return `Forgot the token of ${r.sub} here; the service was not told, so it works until it expires.`;
        const said = r.everywhere
          ? `Signed out ${r.sub} everywhere: ${r.revoked} token(s) revoked.`
          : `Signed out ${r.sub}; the token is revoked.`;
        // The schedules those tokens made or resumed lost their authority (docs/api.md "Schedules").
        const paused = (r.schedules_paused ?? []).map(
          (id) => `Paused schedule ${id} (creator_revoked): swarm-node schedule resume ${id} after you sign in.`,
        );
        return [said, ...paused].join('\n');
      });
    });
}

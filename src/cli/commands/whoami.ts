// swarm-node whoami: the service's verdict on the stored JWT, with its claims and the days it has left.
import { Command } from 'commander';
import { contextFor } from '../context.js';
import { keyValues } from '../table.js';

export function whoamiCommand(): Command {
  return new Command('whoami')
    .description('verify the stored JWT with the service and show who this node is signed in as')
    .addHelpText(
      'after',
      '\nchainId 1202 is the chain of the pay wallet every run is debited from; nodeAccess isolated_svc_server says the\n' +
        "token is for the service's private, isolated nodes; payment_rail svc_pay_wallet:1202 is how runs are paid.\n" +
        '\nExits 4 when not signed in or when the service rejects the token.\n\nExample:\n  $ swarm-node whoami\n  $ swarm-node whoami --json | jq .days_left',
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { verifyToken } = await import('../../node/identity/session.js');
      const signedIn = await verifyToken(
        { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile },
        jwt.token,
      );
      const { credentials_file: _file, ...identity } = signedIn;
      ctx.output.result(identity, (who) =>
        keyValues([
          ['email', who.sub],
          ['tier', who.tier],
          ['chainId', String(who.chainId ?? '-')],
          ['nodeAccess', who.nodeAccess ?? '-'],
          ['payment_rail', who.payment_rail ?? '-'],
          ['expires_at', who.expires_at],
          ['days left', String(who.days_left)],
          ['docs sections', who.docs_sections.join(', ') || '(none)'],
        ]),
      );
    });
}

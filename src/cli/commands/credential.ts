// swarm-node credential rotate: a new node credential, asked for with your recent sign-in (docs/api.md "Credential
// rotation").
import { Command } from 'commander';
import { contextFor } from '../context.js';
import { withRecentSignIn } from '../step-up.js';

export function credentialCommand(): Command {
  const credential = new Command('credential')
    .description("the node's own credential (from enrollment): every call of the node for work carries it")
    .addHelpText('after', '\nExample:\n  $ sudo swarm-node credential rotate');
  credential.addCommand(
    new Command('rotate')
      .description('replace the node credential with a new one; every earlier one stops working once it is used')
      .addHelpText(
        'after',
        `
Needs your sign-in on this node within the last 15 minutes (in a terminal it asks for a code by mail itself): a
copied node credential alone can neither rotate nor keep the node. The new credential is written to
etc/credentials.json (mode 0600) and used at once, which retires every earlier one at the service; a running daemon
picks it up at its next tick, without a restart. Should the answer be lost, the old credential keeps working: run
it again. You are told of every rotation by mail, and it is in swarm-node audit.

Example:
  $ sudo swarm-node credential rotate`,
      )
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const node = await ctx.requireNode();
        const client = await ctx.client();
        const { rotateNodeCredential } = await import('../../node/identity/credential-rotation.js');
        const rotated = await withRecentSignIn(ctx, (token) =>
          rotateNodeCredential(client, token, node.node_id, ctx.paths.credentialsFile, ctx.version),
        );
        ctx.output.result(
          rotated,
          (r) => `Rotated the credential of node ${r.node_id}${r.confirmed ? '; every earlier one no longer works' : ''}.`,
        );
        if (!rotated.confirmed)
          ctx.output.warn(`the new credential is stored but not used yet (${rotated.confirm_error}); the old one works until it is`);
      }),
  );
  return credential;
}

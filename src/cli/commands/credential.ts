// swarm-node credential rotate: a new node credential (issue 13 §1).
import { Command } from 'commander';
import { contextFor } from '../context.js';

export function credentialCommand(): Command {
  const credential = new Command('credential')
    .description("the node's own credential (from enrollment): every call of the node for work carries it")
    .addHelpText('after', '\nExample:\n  $ sudo swarm-node credential rotate');
  credential.addCommand(
    new Command('rotate')
      .description('replace the node credential with a new one; the old one stops working once the new one is used')
      .addHelpText(
        'after',
        `
The new credential is written to etc/credentials.json (mode 0600) and used at once, which retires the old one at
the service. A running daemon picks it up at its next tick, without a restart. Should the answer be lost, the old
credential keeps working: run it again.

Example:
  $ sudo swarm-node credential rotate`,
      )
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const node = await ctx.requireNode();
        const { rotateNodeCredential } = await import('../../node/identity/credential-rotation.js');
        const rotated = await rotateNodeCredential(node, ctx.paths.credentialsFile, ctx.version);
        ctx.output.result(rotated, (r) => `Rotated the credential of node ${r.node_id}${r.confirmed ? '; the old one no longer works' : ''}.`);
        if (!rotated.confirmed) ctx.output.warn(`the new credential is stored but not used yet (${rotated.confirm_error}); the old one works until it is`);
      }),
  );
  return credential;
}

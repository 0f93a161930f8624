// swarm-node enroll: make this home an enrolled node without installing it under /opt (docs/api.md
// "The node's client: decisions").
import { Command } from 'commander';
import { contextFor } from '../context.js';
import { withRecentSignIn } from '../step-up.js';
import { addDeployTokenOptions, refuseTokenArgument, type DeployTokenFlags } from '../deploy-token-option.js';

export function enrollCommand(): Command {
  return addDeployTokenOptions(
    new Command('enroll').description('enroll this home as a node of yours (agents run here), without installing it under /opt'),
  )
    .option('--reenroll', 'enroll anew in place of an enrollment the service no longer accepts (a node it removed)')
    .addHelpText(
      'after',
      `
The node gets its own long-lived credential (kept 0600 in etc/credentials.json); every call of the node for work
uses it, never the JWT. The deploy token comes from activation (--deploy-token-file, or SVC_DEPLOY_TOKEN); without
one, the signed-in user's JWT asks the service for a deploy token for one more node. A host installed with
swarm-node install is enrolled already.

Exits 4 when neither a deploy token nor a sign-in is there, or when the service refuses the deploy token (used,
expired, unknown); 2 when this home is enrolled already or the token file holds no deploy token. Nothing is
written then, and no token is spent.

Example:
  $ swarm-node enroll --deploy-token-file ./deploy-token
  $ swarm-node login --email you@example.com && swarm-node enroll`,
    )
    .action(async (flags: DeployTokenFlags & { reenroll?: boolean }, command: Command) => {
      const ctx = contextFor(command);
      refuseTokenArgument(flags);
      const [{ readDeployToken }, { enrollHere }] = await Promise.all([
        import('../../node/install/deploy-token.js'),
        import('../../node/identity/enroll.js'),
      ]);
      const deployToken = readDeployToken(flags.deployTokenFile, ctx.env);
      delete ctx.env.SVC_DEPLOY_TOKEN;
      // Neither a token nor a sign-in: enrollHere refuses it (exit 4) once it knows this home is not a node already.
      const deps = { client: await ctx.client(), clock: ctx.clock, paths: ctx.paths };
      const options = { reenroll: flags.reenroll === true };
      // Signed in without a token: the service gives one for a recent sign-in only (docs/api.md "Step-up").
      const enrolled =
        deployToken !== undefined || ctx.credentials().jwt === undefined
          ? await enrollHere(deps, deployToken === undefined ? undefined : { deployToken }, options)
          : await withRecentSignIn(ctx, () => enrollHere(deps, { jwt: ctx.requireJwt() }, options));
      ctx.output.result(
        enrolled,
        (e) =>
          `Enrolled this home as node ${e.node_id} of ${e.user_id} (${e.tier_id}); its credential is in ${e.credentials_file} (mode 0600).`,
      );
      ctx.output.next(
        'Next: register an agent here (the catalog: swarm-node agents), for example swarm-node register agent_ops_monitor_004; the service then sends its runs here, and the daemon takes them: swarm-node daemon.',
      );
    });
}

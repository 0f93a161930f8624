// swarm-node install: enroll with the deploy token, then install the node (docs/operations.md
// "What install does, in order"). The work is in src/node/install/; this file parses, reads the token, and renders.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import { checkNodeName } from '../../node/host/location.js';
import { contextFor, type CommandContext } from '../context.js';
import { addDeployTokenOptions, refuseTokenArgument, type DeployTokenFlags } from '../deploy-token-option.js';
import { collectValues } from '../input-options.js';

interface InstallFlags extends DeployTokenFlags {
  root?: string;
  name?: string;
  node?: string;
  from?: string;
  start: boolean;
  dryRun?: boolean;
  label?: string[];
  ephemeral?: boolean;
  uninstallAfter?: boolean;
  autoupdate: boolean;
  reenroll?: boolean;
}

export function installCommand(): Command {
  return addDeployTokenOptions(
    new Command('install').description(
      'enroll this host with the deploy token from activation and install the node under /opt/svc/swarm-node',
    ),
  )
    .option('--root <dir>', 'install under this staging directory instead of / (image builds, tests)')
    .option('--name <name>', 'install another node beside the default one, under /opt/svc/swarm-node/nodes/<name>, with units of its own')
    .option('--from <dir>', 'install this unpacked package instead of the running one (offline upgrade)')
    .option('--no-start', 'do not run systemctl daemon-reload and enable --now')
    .option('--dry-run', 'print every change and make none (does not use the token)')
    .option('--label <labels>', "this node's labels, which runs may require (repeat it, or separate labels with commas)", collectValues)
    .option('--ephemeral', 'enroll a node that takes exactly one run, reports it, then removes itself from your nodes')
    .option('--uninstall-after', 'with --ephemeral: once it removed itself, also remove this install (purged: credentials, database)')
    .option('--no-autoupdate', 'the daemon never updates itself: auto_update false in the config, --no-autoupdate in the unit')
    .option('--reenroll', 'enroll anew in place of an enrollment the service no longer accepts (a node it removed)')
    .addHelpText(
      'after',
      `
The deploy token is single use and never written to disk. Without one, a node signed in (swarm-node login, which
keeps the JWT in the install's credentials) asks the service for its deploy token itself, as enroll does; a
sign-in older than 15 minutes is renewed by mail in a terminal. Re-running install on an enrolled node needs none and
applies only what changed (a new version, an edited unit), restarting the service only then.
--label sets the node's labels (swarm-node labels): written to its config file, sent to the service by the
daemon when it starts; a re-run without --label keeps them, with --label replaces them.
--name N installs node N beside the default node (its own credential, database and units svc-swarm-node@N.service,
svc-swarm-node-agent-N.socket): a name is a lower-case letter, then up to 30 lower-case letters, digits or '-'.
Every other command acts on it with --node N. A deploy token for a name already installed here is refused.
--ephemeral enrolls a node for one run (as GitHub's --ephemeral runners): the service leases it exactly one run
(or its own \`swarm-node run\`); once that run is reported the daemon withdraws its agents, removes the node from
your nodes (event=node_retired) and exits 8, which the unit does not restart. With --uninstall-after it then also
removes the install, as \`swarm-node uninstall --purge --yes\` would. Both apply when the node enrolls.
The daemon updates itself to the service's newest release (verified; docs/operations.md "Auto-update") unless
--no-autoupdate; a re-run without it keeps the config's auto_update as it is (config set auto_update true, then
install again, turns it back on).

Example:
  $ sudo --preserve-env=SVC_DEPLOY_TOKEN swarm-node install
  $ sudo swarm-node install --deploy-token-file ./deploy-token
  $ swarm-node install --root /tmp/stage --no-start --deploy-token-file ./deploy-token
  $ sudo swarm-node install --deploy-token-file ./deploy-token --label gpu --label linux-x64,zone.eu-1
  $ sudo swarm-node install --name gpu --deploy-token-file ./deploy-token-2
  $ sudo swarm-node install --deploy-token-file ./deploy-token --ephemeral --uninstall-after

  $ sudo swarm-node install --deploy-token-file ./deploy-token --no-autoupdate`,
    )
    .action(async (flags: InstallFlags, command: Command) => {
      if (flags.name !== undefined && flags.node !== undefined && flags.name !== flags.node) {
        throw new SvcError('usage', `install --name ${flags.name} and --node ${flags.node} name two nodes`, {
          remedy: 'Give one of them.',
        });
      }
      const ctx = contextFor(command, 'install', flags.name === undefined ? {} : { node: checkNodeName(flags.name, '--name') });
      refuseTokenArgument(flags);
      if (flags.uninstallAfter === true && flags.ephemeral !== true) {
        throw new SvcError('usage', '--uninstall-after is only for an ephemeral node; nothing was installed', {
          remedy: 'Add --ephemeral (swarm-node install --ephemeral --uninstall-after), or leave --uninstall-after out.',
        });
      }
      // Checked before the token is read: a bad label spends nothing.
      const labels = flags.label === undefined ? undefined : (await import('../../contract/labels.js')).parseLabelArguments(flags.label);
      const [{ readDeployToken }, { installPackage }, { installDeps, renderInstall }] = await Promise.all([
        import('../../node/install/deploy-token.js'),
        import('../../node/install/install-package.js'),
        import('../install-result.js'),
      ]);
      const layout = ctx.layout();
      const given = readDeployToken(flags.deployTokenFile, ctx.env);
      // Read once; systemctl and useradd, run later, inherit the environment and have no use for it.
      delete ctx.env.SVC_DEPLOY_TOKEN;
      const deployToken = given ?? (flags.dryRun === true ? undefined : await deployTokenOfSignIn(ctx, flags.reenroll === true));
      const result = await installPackage(installDeps(ctx, layout), {
        deployToken,
        from: flags.from,
        start: flags.start,
        dryRun: flags.dryRun === true,
        ...(labels === undefined ? {} : { labels }),
        ...(flags.ephemeral === true ? { ephemeral: { uninstallAfter: flags.uninstallAfter === true } } : {}),
        ...(flags.autoupdate ? {} : { autoUpdate: false as const }),
        ...(flags.reenroll === true ? { reenroll: true } : {}),
      });
      renderInstall(ctx, result, flags.dryRun === true ? 'would install' : 'installed');
    });
}

/**
 * The deploy token a signed-in node asks the service for when none was given, as enroll does (docs/api.md "The
 * node's client: decisions", "install"); undefined when it needs none (enrolled already) or has no sign-in. With
 * --reenroll, the stored enrollment is first checked to be one the service no longer accepts.
 */
async function deployTokenOfSignIn(ctx: CommandContext, reenroll: boolean): Promise<string | undefined> {
  const [{ readStoredCredentials }, { assertEnrollmentRetired }] = await Promise.all([
    import('../../node/install/enrollment.js'),
    import('../../node/identity/enroll.js'),
  ]);
  const stored = readStoredCredentials(ctx.layout());
  if (stored.node !== undefined && reenroll) await assertEnrollmentRetired(await ctx.client(), stored.node);
  else if (stored.node !== undefined) return undefined;
  if (stored.jwt === undefined) return undefined;
  const [{ withRecentSignIn }, { requestDeployToken }] = await Promise.all([
    import('../step-up.js'),
    import('../../node/service/fleet.js'),
  ]);
  const client = await ctx.client();
  return (await withRecentSignIn(ctx, (token) => requestDeployToken(client, token))).deploy_token;
}

// swarm-node uninstall: stop the service and remove what install wrote (docs/operations.md "Uninstall"). It never
// calls the service.
import { Command, Option } from 'commander';
import type { ChalkInstance } from 'chalk';
import { SvcError } from '../../contract/errors.js';
import { describeChange } from '../../node/install/plan.js';
import type { UninstallResult } from '../../node/install/uninstall-node.js';
import { contextFor, type CommandContext } from '../context.js';

interface UninstallFlags {
  root?: string;
  purge?: boolean;
  yes?: boolean;
  dryRun?: boolean;
  ifRetiredEphemeral?: boolean;
}

export function uninstallCommand(): Command {
  return (
    new Command('uninstall')
      .description('stop and disable the service and remove the node; keeps var/, the credentials and the config unless --purge')
      .option('--root <dir>', 'the staging directory the node was installed under')
      .option('--purge', 'also remove the database (var/), the credentials, the config and the service user')
      .option('-y, --yes', 'confirm --purge without asking (needed when stdin is not a terminal)')
      .option('--dry-run', 'print every change and make none')
      // The unit's ExecStopPost (install --ephemeral --uninstall-after): acts only after the daemon exited 8.
      .addOption(
        new Option(
          '--if-retired-ephemeral',
          'remove the install of an ephemeral node enrolled with --uninstall-after once its daemon exited 8',
        ).hideHelp(),
      )
      .addHelpText(
        'after',
        `
--purge deletes the run journal and the node's credentials for good, and takes the node out of your nodes at the
service with its credential (when the service cannot be reached, the purge goes on and says so: the node then shows
offline there until you remove it or the service does, after 14 days). In a terminal it asks first; elsewhere it
needs --yes (exit 2 without). Without Node, /opt/svc/swarm-node/uninstall.sh does the same.

Example:
  $ sudo swarm-node uninstall
  $ sudo swarm-node uninstall --purge --dry-run
  $ sudo swarm-node uninstall --purge --yes`,
      )
      .action(async (flags: UninstallFlags, command: Command) => {
        const ctx = contextFor(command, 'install');
        if (flags.ifRetiredEphemeral === true) {
          // systemd gives the daemon's exit to ExecStopPost; any other stop (a restart, an upgrade) changes nothing.
          if (ctx.env.EXIT_STATUS !== '8') return;
          const { uninstallRetiredNode } = await import('../../node/install/uninstall-retired.js');
          const removed = await uninstallRetiredNode(ctx.layout(), (line) => ctx.output.info(line), true);
          if (removed !== undefined) ctx.output.info(`removed the install of this ephemeral node (${removed.changes.length} item(s))`);
          return;
        }
        const dryRun = flags.dryRun === true;
        const [{ uninstallNode }, { NodeApi }] = await Promise.all([
          import('../../node/install/uninstall-node.js'),
          import('../../node/service/node-api.js'),
        ]);
        const result = await uninstallNode({
          layout: ctx.layout(),
          purge: flags.purge === true,
          dryRun,
          log: (line) => (dryRun ? undefined : ctx.output.info(line)),
          removeAtService: async (credential) => new NodeApi(await ctx.client(), credential).removeSelf(),
          ...(flags.yes === true ? {} : { confirmPurge: (doomed) => confirmPurge(ctx, doomed) }),
        });
        for (const warning of result.service.warnings) ctx.output.warn(warning);
        if (result.service.action === 'skipped') ctx.output.warn(`not stopping the service: ${result.service.reason}`);
        const atService = result.removed_at_service;
        if (atService !== null && !atService.removed && !dryRun) {
          // Not carried (invocation.ts): this home is gone, and the removal is typed where the user is signed in.
          ctx.output.warn(
            `node ${atService.node_id} stays in your nodes at the service (${atService.reason}): it shows offline there until you remove it (signed in, on any host: swarm-node nodes remove ${atService.node_id} --yes) or the service does, after 14 days offline`,
          );
        }
        ctx.output.result(result, humanUninstall);
      })
  );
}

/** What --purge would destroy that a later install cannot bring back; asked about, or --yes, before it goes. */
async function confirmPurge(ctx: CommandContext, doomed: string[]): Promise<void> {
  if (!ctx.canPrompt()) {
    throw new SvcError('usage', `--purge deletes ${listed(doomed)} for good, and there is no terminal to confirm it on`, {
      remedy: 'Add --yes to confirm (swarm-node uninstall --purge --yes), or see what it removes with --purge --dry-run.',
    });
  }
  const { confirmPurge: ask } = await import('../prompts.js');
  if (!(await ask(doomed))) throw new SvcError('failed', 'not confirmed: nothing was removed');
}

function humanUninstall(result: UninstallResult, style: ChalkInstance): string {
  const lines = result.dry_run ? result.changes.map(describeChange) : [];
  if (result.changes.length === 0) lines.push('nothing to remove: no node is installed here');
  else lines.push(style.green(`${result.dry_run ? 'would remove' : 'removed'} ${result.changes.length} item(s)`));
  if (result.kept.length > 0) lines.push(`kept ${listed(result.kept)} (pass --purge to remove them)`);
  if (result.dry_run && result.removed_at_service !== null)
    lines.push(`would remove node ${result.removed_at_service.node_id} from your nodes at the service`);
  return lines.join('\n');
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

// swarm-node uninstall: stop the service and remove what install wrote (issue 4 §6). It never calls the service.
import { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import { describeChange } from '../../node/install/plan.js';
import type { UninstallResult } from '../../node/install/uninstall-node.js';
import { contextFor } from '../context.js';

interface UninstallFlags {
  root?: string;
  purge?: boolean;
  dryRun?: boolean;
}

export function uninstallCommand(): Command {
  return new Command('uninstall')
    .description('stop and disable the service and remove the node; keeps var/, the credentials and the config unless --purge')
    .option('--root <dir>', 'the staging directory the node was installed under')
    .option('--purge', 'also remove the database (var/), the credentials, the config and the service user')
    .option('--dry-run', 'print every change and make none')
    .addHelpText(
      'after',
      `
Without Node, /opt/svc/swarm-node/uninstall.sh does the same.

Example:
  $ sudo swarm-node uninstall
  $ sudo swarm-node uninstall --purge`,
    )
    .action(async (flags: UninstallFlags, command: Command) => {
      const ctx = contextFor(command);
      const dryRun = flags.dryRun === true;
      const [{ resolveInstallLayout }, { uninstallNode }, { serviceManager }] = await Promise.all([
        import('../../node/install/target.js'),
        import('../../node/install/uninstall-node.js'),
        import('../../node/install/systemctl.js'),
      ]);
      const layout = resolveInstallLayout(flags.root);
      if (layout.onHost && process.getuid?.() !== 0 && !dryRun) {
        const { SvcError } = await import('../../contract/errors.js');
        throw new SvcError('usage', 'uninstalling from this host needs root', { remedy: 'Run it with sudo, or pass --root <dir> for a staging directory.' });
      }
      const result = await uninstallNode({
        layout,
        purge: flags.purge === true,
        services: serviceManager({ noStart: false, onHost: layout.onHost }),
        dryRun,
        log: (line) => (dryRun ? undefined : ctx.output.info(line)),
      });
      for (const warning of result.service.warnings) ctx.output.warn(warning);
      if (result.service.action === 'skipped') ctx.output.warn(`not stopping the service: ${result.service.reason}`);
      ctx.output.result(result, humanUninstall);
    });
}

function humanUninstall(result: UninstallResult, style: ChalkInstance): string {
  const lines = result.dry_run ? result.changes.map(describeChange) : [];
  if (result.changes.length === 0) lines.push('nothing to remove: no node is installed here');
  else lines.push(style.green(`${result.dry_run ? 'would remove' : 'removed'} ${result.changes.length} item(s)`));
  if (result.kept.length > 0) lines.push(`kept ${listed(result.kept)} (pass --purge to remove them)`);
  return lines.join('\n');
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

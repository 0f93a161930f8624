// swarm-node upgrade: install a newer package as a new release and switch to it, or --rollback to the previous
// release (issue 4 §5). The node must be installed already; no token is involved.
import { Command } from 'commander';
import { SvcError } from '../../contract/errors.js';
import type { ChalkInstance } from 'chalk';
import { describeChange } from '../../node/install/plan.js';
import type { RollbackResult } from '../../node/install/rollback.js';
import { contextFor } from '../context.js';

interface UpgradeFlags {
  from?: string;
  root?: string;
  start: boolean;
  dryRun?: boolean;
  rollback?: boolean;
}

export function upgradeCommand(): Command {
  return new Command('upgrade')
    .description('switch the node to another release: the package given with --from (or this one), or back with --rollback')
    .option('--from <dir>', 'the unpacked package of the new version (default: the package this command runs from)')
    .option('--rollback', 'switch back to the previous release (run again to roll forward)')
    .option('--root <dir>', 'the staging directory the node was installed under')
    .option('--no-start', 'do not restart the service')
    .option('--dry-run', 'print every change and make none')
    .addHelpText(
      'after',
      `
The previous release is kept; config, credentials and the database are untouched, and the database is
snapshotted into var/backups/ before every switch.

Example:
  $ sudo swarm-node upgrade --from ./svc-swarm-node-0.2.0
  $ sudo swarm-node upgrade --rollback`,
    )
    .action(async (flags: UpgradeFlags, command: Command) => {
      const ctx = contextFor(command, 'install');
      const layout = ctx.layout();
      const dryRun = flags.dryRun === true;
      if (flags.rollback) {
        if (flags.from !== undefined) {
          throw new SvcError('usage', '--rollback and --from do not go together', { remedy: 'Roll back, or upgrade to a package; not both.' });
        }
        const { rollbackRelease } = await import('../../node/install/rollback.js');
        const result = await rollbackRelease({
          layout,
          start: flags.start,
          dryRun,
          now: () => new Date(ctx.clock.now()),
          log: (line) => (dryRun ? undefined : ctx.output.info(line)),
        });
        for (const warning of result.service.warnings) ctx.output.warn(warning);
        if (result.service.action === 'skipped') ctx.output.warn(`not restarting the service: ${result.service.reason}`);
        ctx.output.result(result, humanRollback);
        return;
      }
      const [{ installPackage }, { installDeps, renderInstall }] = await Promise.all([
        import('../../node/install/install-package.js'),
        import('../install-result.js'),
      ]);
      const result = await installPackage(installDeps(ctx, layout), { deployToken: undefined, from: flags.from, start: flags.start, dryRun, requireInstalled: true });
      renderInstall(ctx, result, dryRun ? 'would upgrade to' : 'upgraded to');
    });
}

function humanRollback(result: RollbackResult, style: ChalkInstance): string {
  const lines = result.dry_run ? result.changes.map(describeChange) : [];
  lines.push(style.green(`${result.dry_run ? 'would roll back' : 'rolled back'} from ${result.from_version} to ${result.to_version}; service ${result.service.action}`));
  if (result.database_backup !== null) lines.push(`database snapshot of ${result.from_version}: ${result.database_backup}`);
  const older = result.database_backups_of_target.at(-1);
  if (older !== undefined) {
    lines.push(`if ${result.to_version} reports the database as newer than itself, restore the snapshot taken when it was left: ${older}`);
  }
  return lines.join('\n');
}

// swarm-node upgrade: the newest release from the service, verified (docs/operations.md "Upgrade"), or a downloaded
// artifact or an unpacked package given with --from, installed as a new release and switched to, with a health check
// of the restarted daemon that rolls back by itself; or --rollback to the previous release (docs/operations.md
// "Rollback"). The node must be installed already; no token is involved (the node credential fetches the release).
import { Command, InvalidArgumentError } from 'commander';
import { SvcError } from '../../contract/errors.js';
import type { ChalkInstance } from 'chalk';
import { describeChange } from '../../node/install/plan.js';
import type { PendingUpdateResult } from '../../node/install/pending-update.js';
import type { RollbackResult } from '../../node/install/rollback.js';
import { contextFor } from '../context.js';

interface UpgradeFlags {
  from?: string;
  to?: string;
  check?: boolean;
  trustKey?: string;
  healthTimeout?: number;
  root?: string;
  start: boolean;
  dryRun?: boolean;
  rollback?: boolean;
  pending?: boolean;
}

export function upgradeCommand(): Command {
  return new Command('upgrade')
    .description('switch the node to the newest release of the service (verified), to a release given with --from, or back with --rollback')
    .option(
      '--from <file|dir>',
      'a downloaded release (.tar.gz with its .manifest and .manifest.sig beside it; air-gapped hosts) or an unpacked package',
    )
    .option('--to <version>', 'switch to exactly this version, older than the installed one too (from the service, or the --from given)')
    .option('--check', 'only say whether the service has a newer release (exit 12 when it has)')
    .option('--trust-key <file>', 'also trust this Ed25519 public key (PEM) for the signature (or SVC_RELEASE_TRUST_KEY)')
    .option('--health-timeout <seconds>', 'how long the new daemon has to start healthy before the node rolls back', seconds, 60)
    .option('--rollback', 'switch back to the previous release (run again to roll forward)')
    .option('--pending', "switch to the update the daemon staged, or roll back one whose daemon failed (the unit's ExecStartPre runs it)")
    .option('--root <dir>', 'the staging directory the node was installed under')
    .option('--no-start', 'do not restart the service')
    .option('--dry-run', 'print every change and make none')
    .addHelpText(
      'after',
      `
A release is checked before anything of it is used: the manifest's Ed25519 signature against the pinned keys,
the keys in etc/release-keys/ and --trust-key; the tarball's SHA-256 against the manifest; every file unpacked.
Releases only move forward: the signed version must be newer than the installed one and the one asked for (the
service's newest, the artifact's name); --to VERSION is how to go back on purpose, --rollback to the previous one.
After the switch the service restarts; a daemon not healthy within --health-timeout is rolled back by itself.
Without systemd, a daemon started by hand is stopped and started again as it was (its arguments, environment and
output file), which upgrade says first; one started with --supervised is stopped for its supervisor to start.
The previous release is kept; config, credentials and the database are untouched, and the database is
snapshotted into var/backups/ before every switch.

Example:
  $ swarm-node upgrade --check
  $ sudo swarm-node upgrade
  $ sudo swarm-node upgrade --from ./swarm-node-0.2.0-linux-x64.tar.gz     # air-gapped
  $ sudo swarm-node upgrade --rollback
  $ sudo swarm-node upgrade --to 0.1.0      # back to this version on purpose
  $ sudo swarm-node upgrade --pending     # what the unit runs before each start of the daemon (auto-update)`,
    )
    .action(async (flags: UpgradeFlags, command: Command) => {
      const ctx = contextFor(command, 'install');
      const layout = ctx.layout();
      const dryRun = flags.dryRun === true;
      if (flags.to !== undefined) {
        if (flags.rollback || flags.pending || flags.check) {
          throw new SvcError('usage', '--to goes with upgrade alone (or with --from)', {
            remedy: `Drop --to, or go to that version alone: sudo swarm-node upgrade --to ${flags.to}.`,
          });
        }
        // Loaded here, not at start: the command tree is built for every invocation (--help too).
        const { isReleaseVersion } = await import('../../lib/release-manifest.js');
        if (!isReleaseVersion(flags.to))
          throw new SvcError('usage', `--to takes a release version, such as 0.2.0; not ${JSON.stringify(flags.to)}`);
      }
      if (flags.rollback) {
        if (flags.from !== undefined) {
          throw new SvcError('usage', '--rollback and --from do not go together', {
            remedy: 'Roll back, or upgrade to a package; not both.',
          });
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
        if (result.service.action === 'skipped' && result.daemon_started === null)
          ctx.output.warn(`not restarting the service: ${result.service.reason}`);
        ctx.output.result(result, humanRollback);
        return;
      }
      const [upgrade, { installDeps, renderInstall }] = await Promise.all([
        import('../../node/install/upgrade-release.js'),
        import('../install-result.js'),
      ]);
      const deps = installDeps(ctx, layout);
      if (flags.pending) {
        const { applyPendingUpdate } = await import('../../node/install/pending-update.js');
        const { autoUpdateOfFile, readConfigFile } = await import('../../node/host/config.js');
        const result = await applyPendingUpdate(deps, {
          autoUpdate: autoUpdateOfFile(readConfigFile(layout.configFile)),
          trustKeyFile: flags.trustKey ?? ctx.env.SVC_RELEASE_TRUST_KEY,
        });
        // Silent when there was nothing to do: it runs before every start of the daemon.
        if (result.action !== 'none' || ctx.output.json) ctx.output.result(result, pendingSummary);
        return;
      }
      if (flags.check) {
        const check = await upgrade.checkForUpgrade(deps);
        ctx.output.result(check, () =>
          check.update_available
            ? `swarm-node ${check.latest_version} is available (this node runs ${check.current_version})`
            : `swarm-node ${check.current_version} is the newest release`,
        );
        // As `apt-get -s upgrade` leaves scripts to parse: a cron job or a fleet check tells the two by the exit code.
        if (check.update_available) throw new SvcError('update_available', `a newer release, ${check.latest_version}, is available`);
        return;
      }
      const healthTimeoutMs = (flags.healthTimeout ?? 60) * 1000;
      const { statSync } = await import('node:fs');
      if (flags.from !== undefined && statSync(flags.from, { throwIfNoEntry: false })?.isDirectory()) {
        const outcome = await upgrade.upgradeFromPackage(deps, flags.from, { to: flags.to, start: flags.start, dryRun, healthTimeoutMs });
        renderInstall(ctx, outcome.install, dryRun ? 'would upgrade to' : 'upgraded to', outcome.health.daemon_started !== undefined);
        return;
      }
      const trustKeyFile = flags.trustKey ?? ctx.env.SVC_RELEASE_TRUST_KEY;
      const result = await upgrade.upgradeRelease(deps, {
        artifact: flags.from,
        to: flags.to,
        trustKeyFile,
        start: flags.start,
        dryRun,
        healthTimeoutMs,
      });
      if (result.install === null) {
        const why = flags.from === undefined ? 'is the newest release' : 'is installed already';
        ctx.output.result(result, () => `swarm-node ${result.from_version} ${why}; nothing to upgrade`);
        return;
      }
      const health = result.health;
      if (health.checked) ctx.output.info(`the new daemon is healthy (${health.seconds?.toFixed(1)} s after the switch)`);
      else if (!dryRun) ctx.output.warn(`the new daemon was not checked: ${health.reason}`);
      // --json: what install answers, and how the upgrade went.
      const shown = Object.assign({}, result.install, {
        upgrade: { from_version: result.from_version, signed_by: result.signed_by, health },
      });
      renderInstall(ctx, shown, dryRun ? 'would upgrade to' : 'upgraded to', health.daemon_started !== undefined);
    });
}

function seconds(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 3600)
    throw new InvalidArgumentError('--health-timeout must be whole seconds from 1 to 3600');
  return parsed;
}

function pendingSummary(result: PendingUpdateResult, style: ChalkInstance): string {
  switch (result.action) {
    case 'switched':
      return style.green(
        `switched to the staged swarm-node ${result.to_version} (was ${result.from_version}); its daemon's first tick keeps it`,
      );
    case 'rolled_back':
      return style.yellow(`rolled back from ${result.from_version} to ${result.to_version}: ${result.reason}`);
    case 'failed':
      return style.yellow(
        `the staged swarm-node ${result.to_version} was not switched to (${result.from_version} stays): ${result.reason}`,
      );
    case 'discarded':
      return `the staged swarm-node ${result.to_version} was discarded: ${result.reason}`;
    case 'none':
      return 'no update is staged';
  }
}

function humanRollback(result: RollbackResult, style: ChalkInstance): string {
  const lines = result.dry_run ? result.changes.map(describeChange) : [];
  lines.push(
    style.green(
      `${result.dry_run ? 'would roll back' : 'rolled back'} from ${result.from_version} to ${result.to_version}; service ${result.service.action}`,
    ),
  );
  if (result.database_backup !== null) lines.push(`database snapshot of ${result.from_version}: ${result.database_backup}`);
  const older = result.database_backups_of_target.at(-1);
  if (older !== undefined) {
    lines.push(`if ${result.to_version} reports the database as newer than itself, restore the snapshot taken when it was left: ${older}`);
  }
  return lines.join('\n');
}

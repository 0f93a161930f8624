// docs/operations.md "Rollback": `upgrade --rollback` switches `current` back to the release kept as `previous` (and
// `previous` to the one left, so a second rollback rolls forward). Config, credentials and the database stay; the
// database backups taken when that release was left are listed, for when the newer version had migrated it. Without
// systemd, a daemon started by hand is stopped and started again as it was, from the release switched to
// (daemon-restart.ts).
import { existsSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { autoUpdateOfFile, readConfigFile } from '../host/config.js';
import { planCurrentSwitch, planHostFiles, type BackupRecord } from './release-switch.js';
import { settleService, type ServiceOutcome } from './service-settle.js';
import type { InstallLayout } from '../host/location.js';
import { readLink } from './links.js';
import { applySteps, type Change } from './plan.js';
import { daemonStartedByHand, restartAsBefore, startAsBefore, type StartedDaemon } from './daemon-restart.js';
import { serviceManager } from './systemctl.js';

export interface RollbackOptions {
  layout: InstallLayout;
  /** false for --no-start: no systemctl at all. */
  start: boolean;
  dryRun: boolean;
  now: () => Date;
  log: (line: string) => void;
  /**
   * Without systemd, a daemon started by hand that upgrade stopped, to start again as it was once `current` is back.
   * Undefined: a daemon started by hand that runs now is stopped and started so (daemon-restart.ts).
   */
  startAsBefore?: StartedDaemon;
}

export interface RollbackResult {
  from_version: string;
  to_version: string;
  dry_run: boolean;
  changes: Change[];
  service: ServiceOutcome;
  database_backup: string | null;
  /** Snapshots taken when `to_version` was left, newest last. */
  database_backups_of_target: string[];
  /** Without systemd, the daemon started by hand that was started again, as before, from the release rolled back to. */
  daemon_started: { pid: number; output: string } | null;
}

export async function rollbackRelease(options: RollbackOptions): Promise<RollbackResult> {
  const { layout } = options;
  if (layout.onHost && process.getuid?.() !== 0 && !options.dryRun) {
    throw new SvcError('usage', 'rolling back the node on this host needs root', { remedy: 'Run it with sudo.' });
  }
  const services = serviceManager({ noStart: !options.start, onHost: layout.onHost, units: layout.units });
  const current = readLink(layout.currentLink);
  const previous = readLink(layout.previousLink);
  if (current === undefined || current === 'not-a-link') {
    throw new SvcError('usage', `no node is installed at ${layout.home}`, {
      remedy: 'Install it first, signed in (it asks the service for the deploy token): sudo swarm-node install.',
    });
  }
  if (previous === undefined || previous === 'not-a-link') {
    throw new SvcError('usage', 'there is no previous release to roll back to', {
      remedy: 'A previous release is kept after an upgrade, which makes one: sudo swarm-node upgrade.',
    });
  }
  const targetDir = join(layout.home, previous);
  if (!existsSync(join(targetDir, 'bin', 'swarm-node.js'))) {
    throw new SvcError('local_state', `the previous release ${targetDir} is missing or incomplete`, {
      remedy: `Install that version again: sudo swarm-node upgrade --to ${basename(previous)}.`,
    });
  }
  const toVersion = basename(previous);
  const backups: BackupRecord = { made: null };
  const steps = [
    ...planCurrentSwitch(layout, toVersion, options.now, backups),
    ...planHostFiles(layout, targetDir, toVersion, autoUpdateOfFile(readConfigFile(layout.configFile))),
  ];
  const changes = steps.map((step) => step.change);
  const result: RollbackResult = {
    from_version: basename(current),
    to_version: toVersion,
    dry_run: options.dryRun,
    changes,
    service: { action: 'unchanged', warnings: [] },
    database_backup: null,
    database_backups_of_target: listBackups(layout, toVersion),
    daemon_started: null,
  };
  if (options.dryRun) {
    result.service =
      services.skipReason === undefined
        ? { action: 'restarted', warnings: [] }
        : { action: 'skipped', reason: services.skipReason, warnings: [] };
    return result;
  }
  const byHand = options.startAsBefore ?? (options.start ? daemonStartedByHand(layout, options.log) : undefined);
  await applySteps(steps, options.log);
  result.database_backup = backups.made;
  result.service = await settleService(services, changes, layout.unitFiles);
  if (typeof byHand === 'object') {
    result.daemon_started = options.startAsBefore !== undefined ? startAsBefore(byHand, layout) : await restartAsBefore(byHand, layout);
    options.log(
      `started the daemon of swarm-node ${toVersion} as before (pid ${result.daemon_started.pid}, its output to ${result.daemon_started.output})`,
    );
  }
  return result;
}

function listBackups(layout: InstallLayout, version: string): string[] {
  if (!existsSync(layout.backupsDir)) return [];
  return readdirSync(layout.backupsDir)
    .filter((name) => name.startsWith(`swarm-node.db.${version}.`))
    .sort()
    .map((name) => join(layout.backupsDir, name));
}

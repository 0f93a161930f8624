// docs/operations.md "Upgrade": switching the node to a release, for install, upgrade and rollback alike. `current`
// moves to the release and the one it left becomes `previous`, the database is snapshotted first (another version
// may migrate it), releases that are neither are pruned, and the host files that belong to the release follow: the
// systemd unit, the /usr/local/bin link and uninstall.sh.
import { chmodSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { readTextIfPresent, writeFileAtomic } from '../host/files.js';
import { NODE_UNIT_NAMES, releaseDir, type InstallLayout } from '../host/location.js';
import { backupDatabase } from '../store/file-checks.js';
import { readLink, relativeLinkText, switchLink } from './links.js';
import type { Step } from './plan.js';
import { unitOfRelease } from './unit-file.js';
import { renderUninstallScript, UNINSTALL_SCRIPT_MODE } from './uninstall-script.js';

/** The snapshot a switch made, filled in when its step runs. */
export interface BackupRecord {
  made: string | null;
}

/**
 * `current` to releases/<version>, the release it left behind as `previous`, a database snapshot before the
 * switch (a new version may migrate it), and releases that are neither pruned.
 */
export function planCurrentSwitch(layout: InstallLayout, version: string, now: () => Date, backups: BackupRecord): Step[] {
  const steps: Step[] = [];
  const wanted = relativeLinkText(layout.currentLink, releaseDir(layout, version));
  const current = readLink(layout.currentLink);
  if (current === wanted) return steps;
  const leaving = typeof current === 'string' && current !== 'not-a-link' ? current : undefined;
  if (leaving !== undefined) {
    const fromVersion = basename(leaving);
    if (existsSync(layout.databaseFile)) {
      steps.push({
        change: {
          action: 'create',
          path: join(layout.backupsDir, `swarm-node.db.${fromVersion}.<time>`),
          detail: 'database snapshot before the switch',
          restart: false,
        },
        apply: async () => {
          backups.made = (await backupDatabase(layout.databaseFile, layout.backupsDir, fromVersion, now())) ?? null;
        },
      });
    }
    steps.push({
      change: {
        action: readLink(layout.previousLink) === undefined ? 'create' : 'update',
        path: layout.previousLink,
        detail: `-> ${leaving}`,
        restart: false,
      },
      apply: () => switchLink(layout.previousLink, leaving),
    });
  }
  steps.push({
    change: {
      action: current === undefined ? 'create' : 'update',
      path: layout.currentLink,
      detail: `-> ${wanted}${leaving ? `, was ${leaving}` : ''}`,
      restart: true,
    },
    apply: () => switchLink(layout.currentLink, wanted),
  });
  const keep = new Set([basename(wanted), ...(leaving === undefined ? [] : [basename(leaving)])]);
  if (leaving === undefined) {
    const previous = readLink(layout.previousLink);
    if (typeof previous === 'string' && previous !== 'not-a-link') keep.add(basename(previous));
  }
  for (const name of listReleases(layout.releasesDir)) {
    if (keep.has(name)) continue;
    steps.push({
      change: { action: 'remove', path: join(layout.releasesDir, name), detail: 'neither current nor previous', restart: false },
      apply: () => rmSync(join(layout.releasesDir, name), { recursive: true, force: true }),
    });
  }
  return steps;
}

/**
 * The units (rendered from the templates of `releaseSource`, the package or release that becomes current, with
 * auto-update as the node's config has it), the /usr/local/bin link and uninstall.sh.
 */
export function planHostFiles(layout: InstallLayout, releaseSource: string, version: string, autoUpdate: boolean): Step[] {
  const steps: Step[] = [];
  NODE_UNIT_NAMES.forEach((name, index) => {
    const file = layout.unitFiles[index]!;
    const unit = unitOfRelease(releaseSource, name, layout.name, { autoUpdate });
    const installedUnit = readTextIfPresent(file);
    if (installedUnit === unit) return;
    steps.push({
      change: {
        action: installedUnit === undefined ? 'create' : 'update',
        path: file,
        detail:
          installedUnit === undefined
            ? 'systemd unit'
            : 'systemd unit differs from the release; local settings belong in a drop-in (systemctl edit)',
        restart: true,
      },
      apply: () => {
        writeFileAtomic(file, unit, 0o644);
        chmodSync(file, 0o644);
      },
    });
  });
  const binTarget = relativeLinkText(layout.binLink, join(layout.currentLink, 'bin', 'swarm-node'));
  const bin = readLink(layout.binLink);
  // The command link is the host's, one for every node: the default node's install takes it, a named node's makes
  // it only where there is none (a host of named nodes alone), never taking it from another node.
  const othersLink = layout.name !== undefined && bin !== undefined && bin !== 'not-a-link';
  if (bin !== binTarget && !othersLink) {
    if (bin === 'not-a-link') {
      throw new SvcError('local_state', `${layout.binLink} exists and is not a link; it is not ours to replace`, {
        remedy: `Move it aside, then re-run: mv ${layout.binLink} ${layout.binLink}.orig`,
      });
    }
    steps.push({
      change: { action: bin === undefined ? 'create' : 'update', path: layout.binLink, detail: `-> ${binTarget}`, restart: false },
      apply: () => switchLink(layout.binLink, binTarget),
    });
  }
  const script = renderUninstallScript(version, layout.name);
  const installedScript = readTextIfPresent(layout.uninstallScript);
  if (installedScript !== script) {
    steps.push({
      change: {
        action: installedScript === undefined ? 'create' : 'update',
        path: layout.uninstallScript,
        detail: 'removes what install wrote',
        restart: false,
      },
      apply: () => {
        writeFileAtomic(layout.uninstallScript, script, UNINSTALL_SCRIPT_MODE);
        chmodSync(layout.uninstallScript, UNINSTALL_SCRIPT_MODE);
      },
    });
  }
  return steps;
}

function listReleases(releasesDir: string): string[] {
  if (!existsSync(releasesDir)) return [];
  return readdirSync(releasesDir).filter((name) => !name.startsWith('.'));
}

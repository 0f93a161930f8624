// swarm-node upgrade --pending: the privileged half of auto-update (docs/operations.md "Auto-update"), run by the
// unit's ExecStartPre as root before every start of the daemon (or by an operator's supervisor before it starts the
// daemon). It switches to the release the daemon staged in var/updates/ through the verified path of `swarm-node
// upgrade` (signature, SHA-256 and every file checked again, on a copy of root's own: var/ is the service user's to
// write; the signed version must be the one requested and newer than the installed one), with no restart
// of its own: the daemon that starts next is the new one. The health check is the new daemon's first tick, which
// ends the probation; a probation still open at the next start means that daemon never got there, and the node
// rolls back to the release it left. Never an error: a start of the daemon is never held up by an update.
import { messageOf } from '../../contract/errors.js';
import { compareVersions } from '../../lib/release-manifest.js';
import { clearStagedUpdate, readUpdateState, removeUpdateState, stagedArtifact, writeUpdateState } from '../release/staged-update.js';
import type { InstallPackageDeps } from './install-package.js';
import { rollbackRelease } from './rollback.js';
import { installedVersion, upgradeRelease } from './upgrade-release.js';

export interface PendingUpdateResult {
  /** none: nothing staged, nothing on probation. discarded: auto_update is off, the staged files are removed. */
  action: 'none' | 'switched' | 'rolled_back' | 'failed' | 'discarded';
  from_version: string | null;
  to_version: string | null;
  reason: string | null;
}

export async function applyPendingUpdate(
  deps: InstallPackageDeps,
  options: { autoUpdate: boolean; trustKeyFile: string | undefined },
): Promise<PendingUpdateResult> {
  const { varDir } = deps.layout;
  const now = () => new Date(deps.clock.now());
  const probation = readUpdateState(varDir, 'probation');
  if (probation !== undefined) {
    removeUpdateState(varDir, 'probation');
    // Someone switched by hand since (upgrade, --rollback): not ours to undo.
    if (installedVersion(deps) !== probation.to_version) return outcome('none', null, null, null);
    const reason = `the daemon of ${probation.to_version} stopped before it was healthy (its first tick); rolled back to ${probation.from_version}`;
    deps.log(`swarm-node ${probation.to_version}: ${reason}`);
    try {
      await rollbackRelease({ layout: deps.layout, start: false, dryRun: false, now, log: deps.log });
    } catch (error) {
      return failed(varDir, probation.to_version, `the rollback failed: ${(error as Error).message}`, now, probation.from_version);
    }
    writeUpdateState(varDir, 'rolledBack', { version: probation.to_version, reason });
    writeUpdateState(varDir, 'failure', { version: probation.to_version, reason, at: now().toISOString() });
    return outcome('rolled_back', probation.to_version, probation.from_version, reason);
  }

  const request = readUpdateState(varDir, 'request');
  if (request === undefined) return outcome('none', null, null, null);
  if (!options.autoUpdate) {
    clearStagedUpdate(varDir);
    return outcome('discarded', null, request.version, 'auto_update is off');
  }
  const fromVersion = installedVersion(deps);
  if (compareVersions(request.version, fromVersion) <= 0) {
    clearStagedUpdate(varDir);
    return outcome('discarded', fromVersion, request.version, `${fromVersion} is installed already`);
  }
  try {
    // The staged files are copied out of var/ (the service user's) and verified in root's own temp directory; the
    // version the request names is the one their signed manifest must have, and it must be newer than this one.
    const result = await upgradeRelease(deps, {
      artifact: stagedArtifact(varDir, request),
      to: undefined,
      trustKeyFile: options.trustKeyFile,
      start: false,
      dryRun: false,
      healthTimeoutMs: 0,
    });
    if (!result.upgraded) return outcome('none', fromVersion, fromVersion, null);
    writeUpdateState(varDir, 'probation', { from_version: fromVersion, to_version: result.to_version, switched_at: now().toISOString() });
    return outcome('switched', fromVersion, result.to_version, null);
  } catch (error) {
    return failed(varDir, request.version, messageOf(error), now, fromVersion);
  } finally {
    clearStagedUpdate(varDir);
  }
}

function failed(varDir: string, version: string, reason: string, now: () => Date, current: string): PendingUpdateResult {
  writeUpdateState(varDir, 'failure', { version, reason, at: now().toISOString() });
  return outcome('failed', current, version, reason);
}

function outcome(
  action: PendingUpdateResult['action'],
  from: string | null,
  to: string | null,
  reason: string | null,
): PendingUpdateResult {
  return { action, from_version: from, to_version: to, reason };
}

// swarm-node upgrade (issue 15 §4): the newest release from the service (or a downloaded one, --from FILE, for
// air-gapped hosts) is verified (release/verify-release.ts), unpacked into a private temp directory and installed
// as a release like any package; the service restarts, and when the new daemon is not healthy within the bound
// (daemon-health.ts) the node rolls back to the release it left, by itself.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { compareVersions, hostPlatform, releaseStem } from '../../lib/release-manifest.js';
import { ReleaseClient, type DownloadedRelease } from '../release/release-client.js';
import { trustedReleaseKeys } from '../release/trusted-keys.js';
import { unpackRelease, verifyRelease, type VerifiedRelease } from '../release/verify-release.js';
import { daemonAlive, readDaemonRecord, waitForHealthyDaemon } from './daemon-health.js';
import { readStoredCredentials } from './enrollment.js';
import { installPackage, type InstallPackageDeps } from './install-package.js';
import type { InstallResult } from './install-node.js';
import { readLink } from './links.js';
import { rollbackRelease } from './rollback.js';

export const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;

export interface UpgradeOptions {
  /** An artifact (.tar.gz, its .manifest and .manifest.sig beside it); undefined: the newest from the service. */
  artifact: string | undefined;
  /** An Ed25519 public key (PEM) to trust besides the pinned ones and etc/release-keys/. */
  trustKeyFile: string | undefined;
  start: boolean;
  dryRun: boolean;
  healthTimeoutMs: number;
}

export interface UpgradeCheck {
  current_version: string;
  latest_version: string;
  update_available: boolean;
}

export interface HealthOutcome {
  checked: boolean;
  /** Why it was not checked: no service manager restarted anything and no daemon was running. */
  reason?: string;
  healthy?: boolean;
  seconds?: number;
}

export interface UpgradeResult {
  from_version: string;
  to_version: string;
  /** False when the newest release is the one installed: nothing was done. */
  upgraded: boolean;
  signed_by: VerifiedRelease['signedBy'] | null;
  install: InstallResult | null;
  health: HealthOutcome;
}

export function installedVersion(deps: Pick<InstallPackageDeps, 'layout'>): string {
  const current = readLink(deps.layout.currentLink);
  if (current === undefined || current === 'not-a-link') {
    throw new SvcError('usage', `no node is installed at ${deps.layout.home}`, { remedy: 'Install it first: install.sh --token-file FILE, or swarm-node install.' });
  }
  return basename(current);
}

function releaseClient(deps: InstallPackageDeps): Promise<ReleaseClient> {
  const node = readStoredCredentials(deps.layout).node;
  const credential = node?.credential;
  if (credential === undefined) throw new SvcError('not_enrolled', `this node is not enrolled (no node credential in ${deps.layout.credentialsFile})`);
  return deps.client().then((client) => new ReleaseClient(client, credential));
}

export async function checkForUpgrade(deps: InstallPackageDeps): Promise<UpgradeCheck> {
  const current = installedVersion(deps);
  const latest = await (await releaseClient(deps)).latest(hostPlatform());
  return { current_version: current, latest_version: latest.version, update_available: compareVersions(latest.version, current) > 0 };
}

export async function upgradeRelease(deps: InstallPackageDeps, options: UpgradeOptions): Promise<UpgradeResult> {
  const fromVersion = installedVersion(deps);
  // Said before a 35 MB download, not after it (install would refuse the same).
  if (deps.layout.onHost && process.getuid?.() !== 0 && !options.dryRun) {
    throw new SvcError('usage', 'upgrading the node on this host needs root', { remedy: 'Run it with sudo; swarm-node upgrade --check needs no root.' });
  }
  const keys = trustedReleaseKeys(deps.layout.etcDir, options.trustKeyFile);
  let downloaded: DownloadedRelease;
  if (options.artifact === undefined) {
    const client = await releaseClient(deps);
    const latest = await client.latest(hostPlatform());
    if (compareVersions(latest.version, fromVersion) <= 0) {
      return { from_version: fromVersion, to_version: fromVersion, upgraded: false, signed_by: null, install: null, health: { checked: false, reason: 'nothing to upgrade' } };
    }
    deps.log(`downloading swarm-node ${latest.version} (${Math.round(latest.artifact.size_bytes / 1e5) / 10} MB)`);
    downloaded = await client.download(latest.version, hostPlatform());
  } else {
    downloaded = readArtifactFiles(options.artifact);
  }
  const verified = verifyRelease(downloaded, keys);
  const { manifest } = verified;
  if (manifest.platform !== hostPlatform()) {
    throw new SvcError('usage', `the release is built for ${manifest.platform}; this host is ${hostPlatform()}`, { remedy: `Use the ${hostPlatform()} artifact.` });
  }
  deps.log(`verified swarm-node ${manifest.version} (signed by ${verified.signedBy.key_id}, ${verified.signedBy.source})`);
  const staging = mkdtempSync(join(tmpdir(), 'swarm-node-upgrade-'));
  try {
    const tree = join(staging, releaseStem(manifest.version, manifest.platform));
    await unpackRelease(downloaded.artifact, manifest, tree);
    const outcome = await switchWithHealthCheck(deps, tree, options);
    return { from_version: fromVersion, to_version: manifest.version, upgraded: !options.dryRun, signed_by: verified.signedBy, ...outcome };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** The artifact and the two files beside it, as `npm run release` names them. */
function readArtifactFiles(artifact: string): DownloadedRelease {
  if (!artifact.endsWith('.tar.gz') || !existsSync(artifact)) {
    throw new SvcError('usage', `${artifact} is not a release artifact (swarm-node-<version>-linux-<arch>.tar.gz)`, {
      remedy: 'Pass the .tar.gz, with its .manifest and .manifest.sig in the same directory; or an unpacked package directory.',
    });
  }
  const manifest = `${artifact.slice(0, -'.tar.gz'.length)}.manifest`;
  for (const file of [manifest, `${manifest}.sig`]) {
    if (!existsSync(file)) throw new SvcError('usage', `${file} is missing: the manifest and its signature sit beside the artifact`);
  }
  return { artifact: readFileSync(artifact), manifest: readFileSync(manifest), signature: readFileSync(`${manifest}.sig`) };
}

/**
 * Installs the package in `tree` as the current release and checks the daemon that starts from it. Under systemd
 * the unit's restart starts it; without (a container, a supervisor of the operator's) a running daemon is sent
 * SIGTERM and whatever supervises it starts the new one. A daemon that is not healthy within the bound: roll back.
 */
export async function switchWithHealthCheck(
  deps: InstallPackageDeps,
  tree: string,
  options: Pick<UpgradeOptions, 'start' | 'dryRun' | 'healthTimeoutMs'>,
): Promise<{ install: InstallResult; health: HealthOutcome }> {
  const before = readDaemonRecord(deps.layout.databaseFile);
  const wasRunning = daemonAlive(before);
  const switchedAt = Date.now();
  const install = await installPackage(deps, { deployToken: undefined, from: tree, start: options.start, dryRun: options.dryRun, requireInstalled: true });
  if (options.dryRun || !options.start) return { install, health: { checked: false, reason: options.dryRun ? 'dry run' : '--no-start' } };
  const managed = install.service.action === 'restarted' || install.service.action === 'started';
  if (!managed && !install.changes.some((change) => change.restart)) return { install, health: { checked: false, reason: 'nothing changed' } };
  if (!managed && !wasRunning) return { install, health: { checked: false, reason: 'no service manager restarted the daemon and none was running' } };
  if (!managed && before.pid !== null) {
    deps.log(`stopping the daemon (pid ${before.pid}) so that its supervisor starts the new release`);
    signal(before.pid, 'SIGTERM');
  }
  const healthy = await waitForHealthyDaemon(deps.layout.databaseFile, switchedAt, options.healthTimeoutMs);
  const seconds = (Date.now() - switchedAt) / 1000;
  if (healthy !== undefined) return { install, health: { checked: true, healthy: true, seconds } };

  deps.log(`the new daemon is not healthy after ${Math.round(options.healthTimeoutMs / 1000)} s: rolling back`);
  const failed = readDaemonRecord(deps.layout.databaseFile);
  const rolledBack = await rollbackRelease({ layout: deps.layout, start: options.start, dryRun: false, now: () => new Date(deps.clock.now()), log: deps.log });
  if (!managed && failed.pid !== null && failed.pid !== before.pid && daemonAlive(failed)) signal(failed.pid, 'SIGTERM');
  throw new SvcError('failed', `swarm-node ${install.version}'s daemon did not start healthy within ${Math.round(options.healthTimeoutMs / 1000)} s; rolled back to ${rolledBack.to_version}`, {
    remedy: `The node runs ${rolledBack.to_version} again. See why the new one failed: journalctl -u ${deps.layout.units.daemon} (or the daemon's own log).`,
  });
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already: its supervisor sees the exit either way.
  }
}

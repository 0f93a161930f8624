// swarm-node upgrade (docs/operations.md "Upgrade"): the newest release from the service, the one named with --to,
// or a downloaded one (--from FILE, for air-gapped hosts) is obtained into a private temp directory and verified
// there (release/obtain-release.ts: capped, hashed as copied, the signed version the one asked for), checked to move
// forward (release/release-order.ts), unpacked from that copy and installed as a release like any package; the
// service restarts, and when the new daemon is not healthy within the bound (daemon-health.ts) the node rolls back
// to the release it left, by itself.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import { compareVersions, hostPlatform, isReleaseVersion, releaseStem } from '../../lib/release-manifest.js';
import { obtainRelease } from '../release/obtain-release.js';
import { ReleaseClient } from '../release/release-client.js';
import { assertMovesForward, assertNotOlder } from '../release/release-order.js';
import { directoryReleaseSource, type ReleaseSource } from '../release/release-source.js';
import { trustedReleaseKeys } from '../release/trusted-keys.js';
import { unpackRelease, type VerifiedRelease } from '../release/verify-release.js';
import { daemonAlive, readDaemonRecord, waitForHealthyDaemon } from './daemon-health.js';
import { daemonStartedByHand, restartAsBefore, signal, stopAndWait } from './daemon-restart.js';
import { readStoredCredentials } from './enrollment.js';
import { installPackage, type InstallPackageDeps } from './install-package.js';
import type { InstallResult } from './install-node.js';
import { readLink } from './links.js';
import { readPackageSource } from './package-source.js';
import { rollbackRelease } from './rollback.js';

export const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;

export interface UpgradeOptions {
  /** An artifact (.tar.gz, its .manifest and .manifest.sig beside it); undefined: from the service. */
  artifact: string | undefined;
  /** --to: exactly this version, older than the installed one too (going back on purpose); undefined: the newest. */
  to: string | undefined;
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
  /** Without systemd, the daemon started by hand that upgrade started again, as before, from the new release. */
  daemon_started?: { pid: number; output: string };
}

export interface UpgradeResult {
  from_version: string;
  to_version: string;
  /** False when the release asked for is the one installed: nothing was done. */
  upgraded: boolean;
  signed_by: VerifiedRelease['signedBy'] | null;
  install: InstallResult | null;
  health: HealthOutcome;
}

export function installedVersion(deps: Pick<InstallPackageDeps, 'layout'>): string {
  const current = readLink(deps.layout.currentLink);
  if (current === undefined || current === 'not-a-link') {
    throw new SvcError('usage', `no node is installed at ${deps.layout.home}`, {
      remedy: 'Install it first, signed in (it asks the service for the deploy token): sudo swarm-node install.',
    });
  }
  return basename(current);
}

function releaseClient(deps: InstallPackageDeps): Promise<ReleaseClient> {
  const node = readStoredCredentials(deps.layout).node;
  const credential = node?.credential;
  if (credential === undefined)
    throw new SvcError('not_enrolled', `this node is not enrolled (no node credential in ${deps.layout.credentialsFile})`);
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
    throw new SvcError('usage', 'upgrading the node on this host needs root', {
      remedy: 'Run it again with sudo; whether a newer release exists needs no root: swarm-node upgrade --check.',
    });
  }
  const keys = trustedReleaseKeys(deps.layout.etcDir, options.trustKeyFile);
  const asked = options.artifact === undefined ? await askService(deps, options.to) : askArtifact(options.artifact, options.to);
  if (asked === undefined || (asked.version === fromVersion && options.to === undefined)) {
    return {
      from_version: fromVersion,
      to_version: fromVersion,
      upgraded: false,
      signed_by: null,
      install: null,
      health: { checked: false, reason: 'nothing to upgrade' },
    };
  }
  // Refused before a byte is fetched when the name says it already; checked again below on the signed version.
  assertMovesForward(asked.version, fromVersion, options.to);
  const staging = mkdtempSync(join(tmpdir(), 'swarm-node-upgrade-'));
  try {
    const release = await obtainRelease(asked.source, { version: asked.version, platform: hostPlatform() }, staging, keys);
    const { manifest } = release;
    assertMovesForward(manifest.version, fromVersion, options.to);
    deps.log(`verified swarm-node ${manifest.version} (signed by ${release.signedBy.key_id}, ${release.signedBy.source})`);
    const tree = join(staging, releaseStem(manifest.version, manifest.platform));
    await unpackRelease(release.artifactFile, manifest, tree);
    const outcome = await switchWithHealthCheck(deps, tree, { ...options, goingBack: options.to !== undefined });
    return { from_version: fromVersion, to_version: manifest.version, upgraded: !options.dryRun, signed_by: release.signedBy, ...outcome };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Which version to fetch from the service (--to, else its newest), and from where; undefined: nothing newer. */
async function askService(
  deps: InstallPackageDeps,
  to: string | undefined,
): Promise<{ version: string; source: ReleaseSource } | undefined> {
  const client = await releaseClient(deps);
  if (to !== undefined) return { version: to, source: client.source(to) };
  const latest = await client.latest(hostPlatform());
  if (compareVersions(latest.version, installedVersion(deps)) <= 0) return undefined;
  deps.log(`downloading swarm-node ${latest.version} (${Math.round(latest.artifact.size_bytes / 1e5) / 10} MB)`);
  return { version: latest.version, source: client.source(latest.version) };
}

/** The version an artifact's name gives (what was asked for: its signed manifest must say the same), and its files. */
function askArtifact(artifact: string, to: string | undefined): { version: string; source: ReleaseSource } {
  const named = /^swarm-node-(.+)-(linux-[a-z0-9]+)\.tar\.gz$/.exec(basename(artifact));
  if (named === null || !isReleaseVersion(named[1]!) || !existsSync(artifact)) {
    throw new SvcError('usage', `${artifact} is not a release artifact (swarm-node-<version>-linux-<arch>.tar.gz)`, {
      remedy:
        'Pass the .tar.gz as `npm run release` named it, with its .manifest and .manifest.sig in the same directory; or an unpacked package directory.',
    });
  }
  const [, version, platform] = named as unknown as [string, string, string];
  if (platform !== hostPlatform()) {
    throw new SvcError('usage', `the release is built for ${platform}; this host is ${hostPlatform()}`, {
      remedy: `Use the ${hostPlatform()} artifact.`,
    });
  }
  const manifest = `${artifact.slice(0, -'.tar.gz'.length)}.manifest`;
  for (const file of [manifest, `${manifest}.sig`]) {
    if (!existsSync(file)) throw new SvcError('usage', `${file} is missing: the manifest and its signature sit beside the artifact`);
  }
  if (to !== undefined && to !== version)
    throw new SvcError('usage', `--to ${to} was asked for, and ${basename(artifact)} is ${version}`, {
      remedy: `Pass the ${to} artifact, or --to ${version}.`,
    });
  return { version, source: directoryReleaseSource(dirname(artifact)) };
}

/**
 * `upgrade --from DIR`: an unpacked package (a checkout, a release tree), not signed: installed as it is, but still
 * only forward unless --to names its version.
 */
export async function upgradeFromPackage(
  deps: InstallPackageDeps,
  dir: string,
  options: Pick<UpgradeOptions, 'to' | 'start' | 'dryRun' | 'healthTimeoutMs'>,
): Promise<{ install: InstallResult; health: HealthOutcome }> {
  const version = readPackageSource(dir).version;
  // The installed version itself converges (a rebuilt package replaces its release), as install does.
  if (options.to === undefined) assertNotOlder(version, installedVersion(deps));
  else assertMovesForward(version, installedVersion(deps), options.to);
  return switchWithHealthCheck(deps, dir, { ...options, goingBack: options.to !== undefined });
}

/**
 * Installs the package in `tree` as the current release and checks the daemon that starts from it. Under systemd
 * the unit's restart starts it. Without: a daemon under a supervisor of the operator's (`daemon --supervised`) is
 * sent SIGTERM and the supervisor starts the new one; one started by hand, which nobody would start again, is
 * restarted here as it was started (daemon-restart.ts), and said so before anything changes. A daemon that is not
 * healthy within the bound: roll back (and start the old one again the same way).
 */
export async function switchWithHealthCheck(
  deps: InstallPackageDeps,
  tree: string,
  options: Pick<UpgradeOptions, 'start' | 'dryRun' | 'healthTimeoutMs'> & { goingBack: boolean },
): Promise<{ install: InstallResult; health: HealthOutcome }> {
  const before = readDaemonRecord(deps.layout.databaseFile);
  const wasRunning = daemonAlive(before);
  const byHand = options.start ? daemonStartedByHand(deps.layout, deps.log) : undefined;
  const switchedAt = Date.now();
  // An upgrade keeps the node's own config: a --base-url or SVC_BASE_URL given to this command is for it alone.
  const install = await installPackage(deps, {
    deployToken: undefined,
    from: tree,
    start: options.start,
    dryRun: options.dryRun,
    requireInstalled: true,
    keepConfig: true,
    allowOlder: options.goingBack,
  });
  if (options.dryRun || !options.start) return { install, health: { checked: false, reason: options.dryRun ? 'dry run' : '--no-start' } };
  const managed = install.service.action === 'restarted' || install.service.action === 'started';
  if (!managed && !install.changes.some((change) => change.restart))
    return { install, health: { checked: false, reason: 'nothing changed' } };
  if (!managed && !wasRunning)
    return { install, health: { checked: false, reason: 'no service manager restarted the daemon and none was running' } };
  if (typeof byHand === 'string') return { install, health: { checked: false, reason: byHand } };
  let started: { pid: number; output: string } | undefined;
  if (byHand !== undefined) {
    started = await restartAsBefore(byHand, deps.layout);
    deps.log(`started the daemon of swarm-node ${install.version} as before (pid ${started.pid}, its output to ${started.output})`);
  } else if (!managed && before.pid !== null) {
    deps.log(`stopping the daemon (pid ${before.pid}) so that its supervisor starts the new release`);
    signal(before.pid, 'SIGTERM');
  }
  const healthy = await waitForHealthyDaemon(deps.layout.databaseFile, switchedAt, options.healthTimeoutMs);
  const seconds = (Date.now() - switchedAt) / 1000;
  if (healthy !== undefined)
    return { install, health: { checked: true, healthy: true, seconds, ...(started === undefined ? {} : { daemon_started: started }) } };

  const bound = Math.round(options.healthTimeoutMs / 1000);
  deps.log(`the new daemon is not healthy after ${bound} s: rolling back`);
  const failed = readDaemonRecord(deps.layout.databaseFile);
  // None recorded a start: it failed at once, or its supervisor did not start it; which, only its log can say.
  const noneStarted = failed.startedAt === null || failed.startedAt < switchedAt;
  if (started !== undefined) await stopAndWait(started.pid);
  const rolledBack = await rollbackRelease({
    layout: deps.layout,
    start: options.start,
    dryRun: false,
    now: () => new Date(deps.clock.now()),
    log: deps.log,
    ...(byHand === undefined ? {} : { startAsBefore: byHand }),
  });
  if (rolledBack.daemon_started === null && !managed && failed.pid !== null && failed.pid !== before.pid && daemonAlive(failed))
    signal(failed.pid, 'SIGTERM');
  const runsAgain =
    rolledBack.daemon_started !== null
      ? `The node runs ${rolledBack.to_version} again: its daemon started as before (pid ${rolledBack.daemon_started.pid})`
      : managed
        ? `The node runs ${rolledBack.to_version} again`
        : `current is ${rolledBack.to_version} again`;
  const where = started !== undefined ? started.output : managed ? `journalctl -u ${deps.layout.units.daemon}` : "its supervisor's log";
  // Under a supervisor of the operator's, a daemon that never recorded a start may be one nobody started: said
  // first, rather than laid on the release.
  const why =
    noneStarted && !managed && started === undefined
      ? `No daemon of ${install.version} recorded a start, and none runs now: its supervisor did not start one (a daemon started with --supervised is stopped for its supervisor to start the new release; started by hand, without it, upgrade restarts it itself), or it failed at once (see ${where}). Start it again under its supervisor.`
      : `See why the new one failed: ${where}.`;
  throw new SvcError(
    'failed',
    `swarm-node ${install.version}'s daemon did not start healthy within ${bound} s; rolled back to ${rolledBack.to_version}`,
    {
      remedy: `${runsAgain}. ${why}`,
    },
  );
}

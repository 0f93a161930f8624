// docs/operations.md "What install does, in order": enroll with the deploy token, then converge the layout of
// docs/decisions/0010-node-layout.md under the install root. Enrollment comes first, so a refused token leaves the
// root untouched; the credentials are the first file written after it, so a run that stops later is finished by a
// re-run that needs no token.
// The parts: enrollment.ts (the token), install-plan.ts (the changes), release-switch.ts (current, previous and the
// host files), service-settle.ts (systemctl at the end).
import { createHash } from 'node:crypto';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SvcError, messageOf } from '../../contract/errors.js';
import type { EnrollResponse } from '../../contract/schemas.js';
import type { NodeEnrollment } from '../identity/credentials.js';
import { assertNotOlder } from '../release/release-order.js';
import { AGENT_USER, type InstallLayout } from '../host/location.js';
import { readConfigFile } from '../host/config.js';
import { deployTokenToEnroll, enrollNode, persistEnrollment, readStoredCredentials, type EphemeralEnrollment } from './enrollment.js';
import { planInstall } from './install-plan.js';
import { readLink } from './links.js';
import type { PackageSource } from './package-source.js';
import { applySteps, describeChange, type Change } from './plan.js';
import type { BackupRecord } from './release-switch.js';
import { plannedService, settleService, type ServiceOutcome } from './service-settle.js';
import { lookupServiceUser } from './service-user.js';
import type { ServiceManager } from './systemctl.js';

export interface InstallNodeOptions {
  layout: InstallLayout;
  source: PackageSource;
  /** Read by the command from --deploy-token-file or SVC_DEPLOY_TOKEN; never from argv. */
  deployToken: string | undefined;
  config: { base_url: string; wallet_url: string };
  /** install --label: the node's labels from now on; undefined keeps the ones it has. */
  labels?: readonly string[];
  /** install --no-autoupdate: false; undefined keeps what the config file says. */
  autoUpdate?: false;
  enroll: (deployToken: string) => Promise<EnrollResponse>;
  services: ServiceManager;
  /** Where proxy variables for the service come from. */
  env: NodeJS.ProcessEnv;
  dryRun: boolean;
  now: () => Date;
  log: (line: string) => void;
  /** `upgrade`: refuse to enroll, the node must be installed already. */
  requireInstalled?: boolean;
  /** `upgrade --to VERSION`: the source may be older than the installed release; otherwise that is refused. */
  allowOlder?: boolean;
  /** install --ephemeral: enroll a node that takes one run (only when enrolling; an enrolled node keeps what it is). */
  ephemeral?: EphemeralEnrollment;
  /**
   * install --reenroll: the stored enrollment is one the service no longer accepts (checked by the caller,
   * identity/enroll.ts assertEnrollmentRetired): enroll anew in its place, and restart the service on the new one.
   */
  reenroll?: boolean;
}

export interface InstallResult {
  node_id: string | null;
  version: string;
  root: string;
  enrolled: boolean;
  dry_run: boolean;
  changes: Change[];
  service: ServiceOutcome;
  database_backup: string | null;
}

export async function installNode(options: InstallNodeOptions): Promise<InstallResult> {
  const { layout, source, log } = options;
  assertWritableRoot(layout);
  assertLinksAreLinks(layout);
  // install.sh over an installed node, or install from an older package: a node never goes back by itself.
  const current = readLink(layout.currentLink);
  if (current !== undefined && current !== 'not-a-link' && options.allowOlder !== true) {
    assertNotOlder(source.version, basename(current), readConfigFile(layout.configFile).base_url);
  }

  const stored = readStoredCredentials(layout);
  const existing = options.reenroll === true ? undefined : stored.node;
  if (existing !== undefined && options.ephemeral !== undefined) assertSameEphemeral(existing, options.ephemeral);
  let enrollment: NodeEnrollment | undefined = existing;
  let enrollNow = false;
  let enrolledChange: Change | undefined;
  if (existing === undefined) {
    const token = deployTokenToEnroll(layout, options.deployToken, options.requireInstalled === true);
    enrollNow = true;
    if (!options.dryRun) {
      // Everything the plan can refuse (a file where a link goes, an unreadable config) is refused now, before
      // the single-use token is spent.
      await planInstall(options, {
        stored,
        enrollment: undefined,
        enrollNow: true,
        serviceUser: undefined,
        agentUserExists: true,
        backups: { made: null },
      });
      enrollment = {
        ...(await enrollNode(options.enroll, token, options.now, options.ephemeral)),
        deploy_token_sha256: tokenDigest(token),
      };
      enrolledChange = persistEnrollment(layout, stored, enrollment);
      // A daemon that stopped on the old enrollment (exit 8, which the unit does not restart) starts on the new one.
      if (options.reenroll === true && stored.node !== undefined) enrolledChange = { ...enrolledChange, restart: true };
      log(describeChange(enrolledChange));
    }
  } else if (options.deployToken !== undefined) {
    refuseNewTokenForEnrolledNode(layout, existing, options.deployToken);
    log(`already enrolled as node ${existing.node_id}; the deploy token was not used`);
  }

  const serviceUser = layout.onHost && !options.dryRun ? await lookupServiceUser() : undefined;
  const agentUserExists = !layout.onHost || (await lookupServiceUser(AGENT_USER)) !== undefined;
  const backups: BackupRecord = { made: null };
  const steps = await planInstall(options, {
    stored,
    enrollment,
    enrollNow: enrollNow && options.dryRun,
    serviceUser,
    agentUserExists,
    backups,
  });
  const changes = [...(enrolledChange === undefined ? [] : [enrolledChange]), ...steps.map((step) => step.change)];
  const result: InstallResult = {
    node_id: enrollment?.node_id ?? null,
    version: source.version,
    root: layout.root,
    enrolled: enrollNow,
    dry_run: options.dryRun,
    changes,
    service: { action: 'unchanged', warnings: [] },
    database_backup: null,
  };
  if (options.dryRun) {
    result.service = plannedService(options.services, changes);
    return result;
  }

  try {
    await applySteps(steps, log);
  } catch (error) {
    const why = messageOf(error);
    throw new SvcError(error instanceof SvcError ? error.code : 'local_state', `the install stopped: ${why}`, {
      remedy: enrollment
        ? `The node is enrolled (${enrollment.node_id}); fix the cause and re-run swarm-node install, which needs no token now and finishes the rest.`
        : 'Fix the cause and re-run swarm-node install.',
      cause: error,
    });
  }
  result.database_backup = backups.made;
  result.service = await settleService(options.services, changes, layout.unitFiles);
  return result;
}

/**
 * install --name N with a deploy token other than the one N enrolled with means another node was meant (a second
 * node with a name in use): refused before anything changes, where a re-run with the same, spent token still
 * converges. The default node keeps ignoring any token on a re-run, as it always has (install.sh re-runs with a fresh
 * one, which it needs to download the release).
 */
function refuseNewTokenForEnrolledNode(layout: InstallLayout, node: NodeEnrollment, deployToken: string): void {
  if (layout.name === undefined || node.deploy_token_sha256 === undefined || node.deploy_token_sha256 === tokenDigest(deployToken.trim()))
    return;
  throw new SvcError(
    'usage',
    `node ${layout.name} is already installed here (node ${node.node_id}); a new deploy token would enroll another node, and it needs a name of its own`,
    {
      remedy: `Give the new node a name of its own (the same install with --name ${layout.name}-2, say), or remove ${layout.name} first (swarm-node --node ${layout.name} uninstall --purge). To converge or upgrade ${layout.name} itself: swarm-node install --name ${layout.name} (no token), or swarm-node --node ${layout.name} upgrade.`,
    },
  );
}

/** The enrolled node keeps the digest of its (spent) token, to tell a re-run from a second node (above). */
function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** --ephemeral and --uninstall-after are what a node is enrolled as: a re-run may repeat them, never change them. */
function assertSameEphemeral(existing: NodeEnrollment, wanted: EphemeralEnrollment): void {
  if (existing.ephemeral === true && (existing.uninstall_after === true) === wanted.uninstallAfter) return;
  const was =
    existing.ephemeral !== true
      ? 'not ephemeral'
      : existing.uninstall_after === true
        ? 'ephemeral with --uninstall-after'
        : 'ephemeral without --uninstall-after';
  throw new SvcError(
    'usage',
    `node ${existing.node_id} is enrolled already, ${was}; --ephemeral and --uninstall-after apply when a node enrolls`,
    {
      remedy:
        'Re-run install with the options it was enrolled with (or none), or enroll a new node in its place: swarm-node uninstall --purge --yes, then install with a fresh deploy token.',
    },
  );
}

/** Before the token is spent: a root we cannot write would burn it for nothing. */
function assertWritableRoot(layout: InstallLayout): void {
  if (layout.onHost && process.getuid?.() !== 0) {
    throw new SvcError('usage', 'installing on this host needs root', {
      remedy:
        'Run it with sudo (keep SVC_DEPLOY_TOKEN with sudo --preserve-env=SVC_DEPLOY_TOKEN), or stage it into a directory you can write with --root.',
    });
  }
  let probe = layout.root;
  while (!existsSync(probe)) probe = join(probe, '..');
  try {
    const stat = statSync(probe);
    if (!stat.isDirectory()) throw new Error('not a directory');
    writeFileSync(join(probe, `.swarm-node-write-probe-${process.pid}`), '', { flag: 'wx' });
    rmSync(join(probe, `.swarm-node-write-probe-${process.pid}`));
  } catch (error) {
    throw new SvcError(
      'usage',
      `cannot write under ${layout.root} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      {
        remedy: 'Choose a --root you can write, or run as root.',
      },
    );
  }
}

function assertLinksAreLinks(layout: InstallLayout): void {
  for (const link of [layout.currentLink, layout.previousLink]) {
    if (readLink(link) === 'not-a-link') {
      throw new SvcError('local_state', `${link} exists and is not a symlink`, {
        remedy: `Move it aside, then re-run: mv ${link} ${link}.orig`,
      });
    }
  }
}

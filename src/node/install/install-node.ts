// issue 4 §1, §2, §5: enroll with the deploy token, then converge the layout of DECISIONS.md "Node layout" under the
// install root. Enrollment comes first, so a refused token leaves the root untouched; the credentials are the
// first file written after it, so a run that stops later is finished by a re-run that needs no token.
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import type { EnrollResponse } from '../../contract/schemas.js';
import { readConfigFile, writeConfigFile, type ConfigFile } from '../config.js';
import { CREDENTIALS_MODE, writeCredentials, type Credentials, type NodeEnrollment } from '../credentials.js';
import { readCredentialsIgnoringMode } from './credentials-repair.js';
import { writeFileAtomic } from '../files.js';
import { backupDatabase } from '../store/file-checks.js';
import { ENVIRONMENT_FILE_MODE, proxyVariables, renderEnvironmentFile } from './environment-file.js';
import { releaseDir, SERVICE_USER, UNIT_IN_RELEASE, type InstallLayout } from '../location.js';
import { readLink, relativeLinkText, switchLink } from './links.js';
import type { PackageSource } from './package-source.js';
import { applySteps, describeChange, type Change, type Step } from './plan.js';
import { installedDigest, removeStagingLeftovers, sourceDigest, writeRelease } from './release.js';
import { createServiceUser, lookupServiceUser, type ServiceUser } from './service-user.js';
import { SYSTEMCTL, type ServiceManager } from './systemctl.js';
import { renderUninstallScript, UNINSTALL_SCRIPT_MODE } from './uninstall-script.js';

export interface InstallNodeOptions {
  layout: InstallLayout;
  source: PackageSource;
  /** Read by the command from --deploy-token-file or SVC_DEPLOY_TOKEN; never from argv. */
  deployToken: string | undefined;
  config: { base_url: string; wallet_url: string };
  enroll: (deployToken: string) => Promise<EnrollResponse>;
  services: ServiceManager;
  /** Where proxy variables for the service come from. */
  env: NodeJS.ProcessEnv;
  dryRun: boolean;
  now: () => Date;
  log: (line: string) => void;
  /** `upgrade`: refuse to enroll, the node must be installed already. */
  requireInstalled?: boolean;
}

export interface ServiceOutcome {
  action: 'started' | 'restarted' | 'unchanged' | 'skipped';
  reason?: string;
  warnings: string[];
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

const DEPLOY_TOKEN_PATTERN = /^[A-Za-z0-9_-]{16,512}$/;

export async function installNode(options: InstallNodeOptions): Promise<InstallResult> {
  const { layout, source, log } = options;
  assertWritableRoot(layout);
  assertLinksAreLinks(layout);

  const stored = readCredentialsIgnoringMode(layout.credentialsFile);
  if (stored instanceof Error) {
    throw new SvcError('local_state', stored.message, {
      remedy: `Move it aside and install again with a fresh deploy token: mv ${layout.credentialsFile} ${layout.credentialsFile}.broken`,
    });
  }
  const existing = stored.node;
  let enrollment: NodeEnrollment | undefined = existing;
  let enrollNow = false;
  let enrolledChange: Change | undefined;
  if (existing === undefined) {
    if (options.requireInstalled) {
      throw new SvcError('usage', `no node is installed at ${layout.home}`, {
        remedy: 'Install it first: swarm-node install --deploy-token-file <file>.',
      });
    }
    if (options.deployToken === undefined) {
      throw new SvcError('usage', 'this node is not enrolled yet, and no deploy token was given', {
        remedy: 'Put the deploy token from activation in a file and pass --deploy-token-file <file>, or set SVC_DEPLOY_TOKEN.',
      });
    }
    const token = options.deployToken.trim();
    // The message never quotes the token, not even a malformed one.
    if (!DEPLOY_TOKEN_PATTERN.test(token)) {
      throw new SvcError('usage', 'the deploy token given is not a deploy token (expected the base64url string from activation)', {
        remedy: 'Copy the deploy_token of `swarm-node activate` into the file, nothing else.',
      });
    }
    enrollNow = true;
    if (!options.dryRun) {
      // Everything the plan can refuse (a file where a link goes, an unreadable config) is refused now, before
      // the single-use token is spent.
      await planInstall(options, { stored, enrollment: undefined, enrollNow: true, serviceUser: undefined, backups: { made: null } });
      enrollment = await enrollNode(options, token);
      enrolledChange = persistEnrollment(layout, stored, enrollment);
      log(describeChange(enrolledChange));
    }
  } else if (options.deployToken !== undefined) {
    log(`already enrolled as node ${existing.node_id}; the deploy token was not used`);
  }

  const serviceUser = layout.onHost && !options.dryRun ? await lookupServiceUser() : undefined;
  const backups: BackupRecord = { made: null };
  const steps = await planInstall(options, { stored, enrollment, enrollNow: enrollNow && options.dryRun, serviceUser, backups });
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
    const why = error instanceof Error ? error.message : String(error);
    throw new SvcError(error instanceof SvcError ? error.code : 'local_state', `the install stopped: ${why}`, {
      remedy: enrollment
        ? `The node is enrolled (${enrollment.node_id}); fix the cause and re-run swarm-node install, which needs no token now and finishes the rest.`
        : 'Fix the cause and re-run swarm-node install.',
      cause: error,
    });
  }
  result.database_backup = backups.made;
  result.service = await settleService(options.services, changes, layout.unitFile);
  return result;
}

/** The first write after the token is spent: from here on, a re-run needs no token. */
function persistEnrollment(layout: InstallLayout, stored: Credentials, enrollment: NodeEnrollment): Change {
  for (const dir of [layout.home, layout.etcDir]) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
  }
  writeCredentials(layout.credentialsFile, { ...stored, node: enrollment });
  return { action: 'create', path: layout.credentialsFile, detail: `node ${enrollment.node_id}, mode 0600`, restart: false };
}

async function enrollNode(options: InstallNodeOptions, token: string): Promise<NodeEnrollment> {
  try {
    const enrolled = await options.enroll(token);
    return {
      node_id: enrolled.node_id,
      user_id: enrolled.user_id,
      tier_id: enrolled.tier_id,
      enrolled_at: options.now().toISOString(),
      credential: enrolled.node_credential,
    };
  } catch (error) {
    if (error instanceof SvcError && error.code === 'deploy_token_invalid') {
      throw new SvcError('deploy_token_invalid', `the service refused the deploy token (${error.message}); nothing was installed`, {
        ...(error.remedy === undefined ? {} : { remedy: error.remedy }),
        cause: error,
      });
    }
    throw error;
  }
}

interface PlanContext {
  stored: Credentials;
  enrollment: NodeEnrollment | undefined;
  enrollNow: boolean;
  serviceUser: ServiceUser | undefined;
  backups: BackupRecord;
}

export interface BackupRecord {
  made: string | null;
}

async function planInstall(options: InstallNodeOptions, context: PlanContext): Promise<Step[]> {
  const { layout, source } = options;
  const steps: Step[] = [];
  const add = (change: Omit<Change, 'restart'> & { restart?: boolean }, apply: Step['apply']) =>
    steps.push({ change: { restart: false, ...change }, apply });
  let user = context.serviceUser;
  const ownedByService = (path: string) => user !== undefined && statSync(path).uid === user.uid;

  // A dry run lists the credentials an enrollment would write; a real run has written them already (persistEnrollment).
  if (context.enrollNow) {
    add({ action: 'create', path: layout.credentialsFile, detail: 'node (from enrollment), mode 0600' }, () => {
      throw new Error('the credentials are written right after enrollment, never by a planned step');
    });
  } else if (existsSync(layout.credentialsFile) && (statSync(layout.credentialsFile).mode & 0o777) !== CREDENTIALS_MODE) {
    add(
      { action: 'update', path: layout.credentialsFile, detail: 'mode to 0600; it was readable by others, so if others can log in here, sign in again (swarm-node login)' },
      () => chmodSync(layout.credentialsFile, CREDENTIALS_MODE),
    );
  }

  for (const [dir, mode] of [
    [layout.home, 0o755],
    [layout.etcDir, 0o755],
    [layout.varDir, 0o700],
    [layout.releasesDir, 0o755],
  ] as const) {
    const present = existsSync(dir) ? statSync(dir).mode & 0o777 : undefined;
    if (present !== mode) {
      add({ action: present === undefined ? 'create' : 'update', path: dir, detail: `directory, mode ${octal(mode)}` }, () => {
        mkdirSync(dir, { recursive: true, mode });
        chmodSync(dir, mode);
      });
    }
  }

  if (layout.onHost) {
    if (user === undefined) {
      add({ action: 'run', path: `useradd --system ${SERVICE_USER}`, detail: 'the service user' }, async () => {
        user = (await lookupServiceUser()) ?? (await createServiceUser());
      });
    }
    // The service writes var/ and reads its credentials; nothing else of the install is its own.
    for (const path of [layout.varDir, layout.credentialsFile]) {
      if (!existsSync(path) || !ownedByService(path)) {
        add({ action: 'update', path, detail: `owner ${SERVICE_USER}` }, () => {
          chownSync(path, user!.uid, user!.gid);
        });
      }
    }
  }

  for (const leftover of listStagingLeftovers(layout.releasesDir)) {
    add({ action: 'remove', path: leftover, detail: 'left by an interrupted install' }, () => void removeStagingLeftovers(layout.releasesDir));
    break;
  }

  const target = releaseDir(layout, source.version);
  const installed = installedDigest(target);
  if (installed === undefined || installed !== sourceDigest(source)) {
    add(
      {
        action: installed === undefined ? 'create' : 'update',
        path: target,
        detail: `release ${source.version} from ${source.dir}, ${source.files.length} files${installed === undefined ? '' : '; the installed copy differs'}`,
        restart: true,
      },
      () => writeRelease(source, target),
    );
  }

  steps.push(...planCurrentSwitch(layout, source.version, options.now, context.backups));
  steps.push(...planHostFiles(layout, join(source.dir, UNIT_IN_RELEASE), source.version));

  const desiredConfig = desiredConfigFile(layout, options.config, context.enrollment, context.enrollNow);
  if (desiredConfig.changed) {
    add({ action: existsSync(layout.configFile) ? 'update' : 'create', path: layout.configFile, detail: desiredConfig.detail, restart: true }, () => {
      writeConfigFile(layout.configFile, desiredConfig.config);
      chmodSync(layout.configFile, 0o644);
    });
  }

  const proxies = proxyVariables(options.env);
  if (proxies.length > 0) {
    const content = renderEnvironmentFile(proxies);
    if (readText(layout.environmentFile) !== content) {
      add(
        {
          action: existsSync(layout.environmentFile) ? 'update' : 'create',
          path: layout.environmentFile,
          detail: `proxy variables for the service: ${proxies.map(([name]) => name).join(', ')}; mode 0600`,
          restart: true,
        },
        () => {
          writeFileAtomic(layout.environmentFile, content, ENVIRONMENT_FILE_MODE);
          chmodSync(layout.environmentFile, ENVIRONMENT_FILE_MODE);
        },
      );
    }
  }
  return steps;
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
        change: { action: 'create', path: join(layout.backupsDir, `swarm-node.db.${fromVersion}.<time>`), detail: 'database snapshot before the switch', restart: false },
        apply: async () => {
          backups.made = (await backupDatabase(layout.databaseFile, layout.backupsDir, fromVersion, now())) ?? null;
        },
      });
    }
    steps.push({
      change: { action: readLink(layout.previousLink) === undefined ? 'create' : 'update', path: layout.previousLink, detail: `-> ${leaving}`, restart: false },
      apply: () => switchLink(layout.previousLink, leaving),
    });
  }
  steps.push({
    change: { action: current === undefined ? 'create' : 'update', path: layout.currentLink, detail: `-> ${wanted}${leaving ? `, was ${leaving}` : ''}`, restart: true },
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

/** The unit (from the release that becomes current), the /usr/local/bin link and uninstall.sh. */
export function planHostFiles(layout: InstallLayout, unitSource: string, version: string): Step[] {
  const steps: Step[] = [];
  const unit = readFileSync(unitSource, 'utf8');
  const installedUnit = readText(layout.unitFile);
  if (installedUnit !== unit) {
    steps.push({
      change: {
        action: installedUnit === undefined ? 'create' : 'update',
        path: layout.unitFile,
        detail: installedUnit === undefined ? 'systemd unit' : 'systemd unit differs from the release; local settings belong in a drop-in (systemctl edit)',
        restart: true,
      },
      apply: () => {
        writeFileAtomic(layout.unitFile, unit, 0o644);
        chmodSync(layout.unitFile, 0o644);
      },
    });
  }
  const binTarget = relativeLinkText(layout.binLink, join(layout.currentLink, 'bin', 'swarm-node'));
  const bin = readLink(layout.binLink);
  if (bin !== binTarget) {
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
  const script = renderUninstallScript(version);
  const installedScript = readText(layout.uninstallScript);
  if (installedScript !== script) {
    steps.push({
      change: { action: installedScript === undefined ? 'create' : 'update', path: layout.uninstallScript, detail: 'removes what install wrote', restart: false },
      apply: () => {
        writeFileAtomic(layout.uninstallScript, script, UNINSTALL_SCRIPT_MODE);
        chmodSync(layout.uninstallScript, UNINSTALL_SCRIPT_MODE);
      },
    });
  }
  return steps;
}

function desiredConfigFile(
  layout: InstallLayout,
  config: { base_url: string; wallet_url: string },
  enrollment: NodeEnrollment | undefined,
  enrolling: boolean,
): { config: ConfigFile; changed: boolean; detail: string } {
  const present = readConfigFile(layout.configFile);
  const wanted: ConfigFile = { ...present, base_url: config.base_url, wallet_url: config.wallet_url };
  if (enrollment !== undefined) wanted.node_id = enrollment.node_id;
  // A dry run does not enroll: the node id it will write is not known yet.
  const differing = (['base_url', 'wallet_url', 'node_id'] as const).filter((key) => present[key] !== wanted[key] || (key === 'node_id' && enrolling));
  return {
    config: wanted,
    changed: !existsSync(layout.configFile) || differing.length > 0,
    detail: differing.map((key) => `${key} ${wanted[key] ?? '(after enrollment)'}`).join(', '),
  };
}

/**
 * After the files: a unit not yet enabled is enabled and started; an enabled one is restarted only when something
 * it reads changed. The unit being new or edited needs a daemon-reload first.
 */
export async function settleService(services: ServiceManager, changes: readonly Change[], unitFile: string): Promise<ServiceOutcome> {
  const planned = plannedService(services, changes);
  if (services.skipReason !== undefined) return planned;
  const warnings: string[] = [];
  const unitChanged = changes.some((change) => change.path === unitFile);
  if (!(await services.isEnabled())) {
    pushWarning(warnings, await services.run(SYSTEMCTL.daemonReload));
    pushWarning(warnings, await services.run(SYSTEMCTL.enableNow));
    return { action: 'started', warnings };
  }
  if (planned.action === 'unchanged') return planned;
  if (unitChanged) pushWarning(warnings, await services.run(SYSTEMCTL.daemonReload));
  pushWarning(warnings, await services.run(SYSTEMCTL.restart));
  return { action: 'restarted', warnings };
}

function plannedService(services: ServiceManager, changes: readonly Change[]): ServiceOutcome {
  const restart = changes.some((change) => change.restart);
  if (services.skipReason !== undefined) return restart ? { action: 'skipped', reason: services.skipReason, warnings: [] } : { action: 'unchanged', warnings: [] };
  return { action: restart ? 'restarted' : 'unchanged', warnings: [] };
}

function pushWarning(warnings: string[], warning: string | undefined): void {
  if (warning !== undefined) warnings.push(warning);
}

/** Before the token is spent: a root we cannot write would burn it for nothing. */
function assertWritableRoot(layout: InstallLayout): void {
  if (layout.onHost && process.getuid?.() !== 0) {
    throw new SvcError('usage', 'installing on this host needs root', {
      remedy: 'Run it with sudo (keep SVC_DEPLOY_TOKEN with sudo --preserve-env=SVC_DEPLOY_TOKEN), or pass --root <dir> to stage into a directory.',
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
    throw new SvcError('usage', `cannot write under ${layout.root} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, {
      remedy: 'Choose a --root you can write, or run as root.',
    });
  }
}

function assertLinksAreLinks(layout: InstallLayout): void {
  for (const link of [layout.currentLink, layout.previousLink]) {
    if (readLink(link) === 'not-a-link') {
      throw new SvcError('local_state', `${link} exists and is not a symlink`, { remedy: `Move it aside, then re-run: mv ${link} ${link}.orig` });
    }
  }
}

function listReleases(releasesDir: string): string[] {
  if (!existsSync(releasesDir)) return [];
  return readdirSync(releasesDir).filter((name) => !name.startsWith('.'));
}

function listStagingLeftovers(releasesDir: string): string[] {
  if (!existsSync(releasesDir)) return [];
  return readdirSync(releasesDir)
    .filter((name) => name.startsWith('.staging-') || name.startsWith('.replaced-'))
    .map((name) => join(releasesDir, name));
}

export function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    // ENOTDIR: a file where a parent directory should be; the file is absent, and writing it will say why.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

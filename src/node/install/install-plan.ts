// docs/operations.md "What install creates": what an install changes, listed before anything is done. The layout of
// docs/decisions/0010-node-layout.md under the install root: directories and their modes, the service user and what
// it owns, the release, the switch to it (release-switch.ts), the config file and the service's proxy variables. A
// step is listed only when the host differs from what it should be, so a re-run lists what changed and nothing else.
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { autoUpdateOfFile, readConfigFile, writeConfigFile, type ConfigFile } from '../host/config.js';
import { CREDENTIALS_MODE, type Credentials, type NodeEnrollment } from '../identity/credentials.js';
import { readTextIfPresent, writeFileAtomic } from '../host/files.js';
import { agentSocketPath, AGENT_USER, releaseDir, SERVICE_USER, VAR_DIR_MODE, type InstallLayout } from '../host/location.js';
import { ENVIRONMENT_FILE_MODE, proxyVariables, renderEnvironmentFile } from './environment-file.js';
import type { PackageSource } from './package-source.js';
import type { Change, Step } from './plan.js';
import { installedDigest, removeStagingLeftovers, sourceDigest, writeRelease } from './release.js';
import { planCurrentSwitch, planHostFiles, type BackupRecord } from './release-switch.js';
import { createServiceUser, lookupServiceUser, type ServiceUser } from './service-user.js';

export interface PlanInput {
  layout: InstallLayout;
  source: PackageSource;
  config: { base_url: string; wallet_url: string };
  /** install --label: the node's labels from now on (normalised); undefined keeps the ones it has. */
  labels?: readonly string[];
  /** install --no-autoupdate: false; undefined keeps what the config file says. */
  autoUpdate?: false;
  /** Where proxy variables for the service come from. */
  env: NodeJS.ProcessEnv;
  now: () => Date;
}

export interface PlanContext {
  stored: Credentials;
  enrollment: NodeEnrollment | undefined;
  /** A dry run that would enroll: the credentials and the node id are listed, not known. */
  enrollNow: boolean;
  serviceUser: ServiceUser | undefined;
  /** Whether the agent user exists on the host (looked up once, like serviceUser). */
  agentUserExists: boolean;
  backups: BackupRecord;
}

export async function planInstall(input: PlanInput, context: PlanContext): Promise<Step[]> {
  const { layout, source } = input;
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
      {
        action: 'update',
        path: layout.credentialsFile,
        detail: 'mode to 0600; it was readable by others, so if others can log in here, sign in again (swarm-node login)',
      },
      () => chmodSync(layout.credentialsFile, CREDENTIALS_MODE),
    );
  }

  for (const [dir, mode] of [
    [layout.home, 0o755],
    [layout.etcDir, 0o755],
    [layout.varDir, VAR_DIR_MODE],
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
    // The user systemd starts agent runs as (svc-swarm-node-agent@.service): never the daemon's, so an agent cannot
    // read what the daemon keeps.
    if (!context.agentUserExists) {
      add({ action: 'run', path: `useradd --system ${AGENT_USER}`, detail: "the agent runs' user" }, async () => {
        if ((await lookupServiceUser(AGENT_USER)) === undefined) await createServiceUser(AGENT_USER);
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
    add(
      { action: 'remove', path: leftover, detail: 'left by an interrupted install' },
      () => void removeStagingLeftovers(layout.releasesDir),
    );
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

  const desiredConfig = desiredConfigFile(layout, input, context.enrollment, context.enrollNow);
  steps.push(...planCurrentSwitch(layout, source.version, input.now, context.backups));
  steps.push(...planHostFiles(layout, source.dir, source.version, autoUpdateOfFile(desiredConfig.config)));

  if (desiredConfig.changed) {
    add(
      { action: existsSync(layout.configFile) ? 'update' : 'create', path: layout.configFile, detail: desiredConfig.detail, restart: true },
      () => {
        writeConfigFile(layout.configFile, desiredConfig.config);
        chmodSync(layout.configFile, 0o644);
      },
    );
  }

  const proxies = proxyVariables(input.env);
  if (proxies.length > 0) {
    const content = renderEnvironmentFile(proxies);
    if (readTextIfPresent(layout.environmentFile) !== content) {
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

function desiredConfigFile(
  layout: InstallLayout,
  { config, labels, autoUpdate }: Pick<PlanInput, 'config' | 'labels' | 'autoUpdate'>,
  enrollment: NodeEnrollment | undefined,
  enrolling: boolean,
): { config: ConfigFile; changed: boolean; detail: string } {
  const present = readConfigFile(layout.configFile);
  const wanted: ConfigFile = {
    ...present,
    base_url: config.base_url,
    wallet_url: config.wallet_url,
    ...(labels === undefined ? {} : { labels: [...labels] }),
    ...(autoUpdate === false ? { auto_update: 'false' } : {}),
  };
  if (enrollment !== undefined) wanted.node_id = enrollment.node_id;
  // A named node's agent socket is its own (its socket unit listens there); the default node's is the default.
  if (layout.name !== undefined) wanted.agent_socket = agentSocketPath(layout.name);
  // A dry run does not enroll: the node id it will write is not known yet.
  const differing = (['base_url', 'wallet_url', 'node_id', 'agent_socket', 'auto_update'] as const).filter(
    (key) => present[key] !== wanted[key] || (key === 'node_id' && enrolling),
  );
  const relabelled = labels !== undefined && JSON.stringify(present.labels) !== JSON.stringify(wanted.labels);
  return {
    config: wanted,
    changed: !existsSync(layout.configFile) || differing.length > 0 || relabelled,
    detail: [
      ...differing.map((key) => `${key} ${wanted[key] ?? '(after enrollment)'}`),
      ...(relabelled ? [`labels ${labels.join(',') || '(none)'}`] : []),
    ].join(', '),
  };
}

function listStagingLeftovers(releasesDir: string): string[] {
  if (!existsSync(releasesDir)) return [];
  return readdirSync(releasesDir)
    .filter((name) => name.startsWith('.staging-') || name.startsWith('.replaced-'))
    .map((name) => join(releasesDir, name));
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

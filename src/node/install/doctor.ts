// docs/operations.md "Doctor": `swarm-node doctor` checks an installed node and, for every failed check, prints the
// command that fixes it. Checks only read: the database is opened read-only, the service is asked a public GET (the
// same ping `status` measures latency with).
import { existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { execa } from 'execa';
import type { Clock } from '../../lib/clock.js';
import { autoUpdateOfFile, readConfigFile } from '../host/config.js';
import { CREDENTIALS_MODE } from '../identity/credentials.js';
import { admits, describeVersion, minimumNode, parseEngineRange } from '../host/node-version.js';
import type { ServiceClient } from '../service/service-client.js';
import { readManifest } from '../../lib/package-dir.js';
import { readCredentialsIgnoringMode } from './credentials-repair.js';
import { checkDatabase, checkEnrollment, checkIsolation, checkService, checkToken, type DoctorCheck } from './doctor-checks.js';
import { checkDaemon, checkOnline, type DaemonExpectation } from './doctor-liveness.js';
import { ENVIRONMENT_FILE_MODE } from './environment-file.js';
import {
  hostPathOf,
  installCommandOf,
  NODE_UNIT_NAMES,
  SERVICE_USER,
  unitInRelease,
  VAR_DIR_MODE,
  type InstallLayout,
  type NodePaths,
} from '../host/location.js';
import { readLink } from './links.js';
import { lookupServiceUser } from './service-user.js';
import { templateOf, unitOfRelease } from './unit-file.js';

export type { CheckStatus, DoctorCheck } from './doctor-checks.js';

export interface DoctorReport {
  root: string;
  home: string;
  ok: boolean;
  checks: DoctorCheck[];
}

export interface DoctorOptions {
  /**
   * An install (--root, the one this program runs from, the host, or SWARM_NODE_HOME naming one), or a node home
   * that is not one (SWARM_NODE_HOME of a node run from a checkout: `swarm-node enroll`), whose install checks do not
   * apply.
   */
  target: { layout: InstallLayout } | { home: NodePaths };
  clock: Clock;
  /** The node's client, on the base URL in force (flag > env > the install's config file). */
  client: ServiceClient;
  /** How far the service's clock may be from ours before tokens and webhook signatures misbehave. */
  maxClockSkewSeconds?: number;
}

/** What a host needs for the Node.js a release ships (docs/operations.md "Releases"). */
const RUNTIME_HOST_FIX = 'install on a host with glibc 2.28 or newer (ldd --version shows it), which the shipped Node.js needs';

/** systemd's default PATH for services: where `#!/usr/bin/env node` in ExecStart looks. */
const SYSTEMD_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  if ('home' in options.target) return doctorOfHome(options, options.target.home);
  const { layout } = options.target;
  const credentials = readCredentialsIgnoringMode(layout.credentialsFile);
  const checks: DoctorCheck[] = [
    checkLayout(layout),
    ...(await checkModesAndOwners(layout)),
    checkUnit(layout),
    await checkNode(layout),
    checkEnrollment(credentials, { enroll: 'sudo swarm-node install' }),
    ...(await checkService(options)),
    checkToken(credentials, options.clock),
    await checkDatabase(layout, layout.units.daemon),
    checkIsolation(layout),
    ...(await checksAtWork(options, layout, credentials, {
      // A staged install (--root) runs nothing here: its host starts the daemon when it boots the install.
      start: layout.onHost ? `sudo systemctl start ${layout.units.daemon}` : undefined,
      severity: layout.onHost ? 'fail' : 'warn',
      enroll: 'sudo swarm-node install',
    })),
  ];
  return { root: layout.root, home: layout.home, ok: checks.every((check) => check.status !== 'fail'), checks };
}

/**
 * A node run from a home of its own (SWARM_NODE_HOME, `swarm-node enroll`): what an install has (a release, the
 * unit, the service user) is not there to check; its credentials, the service, the clock, the token and the
 * database are.
 */
async function doctorOfHome(options: DoctorOptions, home: NodePaths): Promise<DoctorReport> {
  const credentials = readCredentialsIgnoringMode(home.credentialsFile);
  const layout: DoctorCheck = {
    name: 'layout',
    status: 'ok',
    detail: `${home.home}: a node home (SWARM_NODE_HOME), not an install; the release, unit, owner and runtime checks do not apply`,
  };
  const checks: DoctorCheck[] = [
    layout,
    checkCredentialsMode(home.credentialsFile),
    checkEnrollment(credentials, { enroll: 'swarm-node enroll' }),
    ...(await checkService(options)),
    checkToken(credentials, options.clock),
    await checkDatabase(home, 'the daemon (swarm-node daemon) if it runs'),
    checkIsolation(home),
    // It runs in the foreground: under a supervisor of the operator's, or in a terminal of its own.
    ...(await checksAtWork(options, home, credentials, { start: 'swarm-node daemon', severity: 'fail', enroll: 'swarm-node enroll' })),
  ];
  return { root: home.home, home: home.home, ok: checks.every((check) => check.status !== 'fail'), checks };
}

/** That the daemon runs here, and that the service sees the node online (doctor-liveness.ts). */
async function checksAtWork(
  options: DoctorOptions,
  paths: NodePaths,
  credentials: ReturnType<typeof readCredentialsIgnoringMode>,
  expected: DaemonExpectation,
): Promise<DoctorCheck[]> {
  const daemon = await checkDaemon(paths, options.clock, expected);
  return [
    daemon,
    ...(await checkOnline(credentials, options.client, options.clock, { ...expected, daemonRunning: daemon.status === 'ok' })),
  ];
}

function checkCredentialsMode(credentialsFile: string): DoctorCheck {
  const actual = existsSync(credentialsFile) ? statSync(credentialsFile).mode & 0o777 : CREDENTIALS_MODE;
  if (actual === CREDENTIALS_MODE) return { name: 'modes', status: 'ok', detail: `credentials ${octal(CREDENTIALS_MODE)}` };
  return {
    name: 'modes',
    status: 'fail',
    detail: `${credentialsFile} is ${octal(actual)}, should be ${octal(CREDENTIALS_MODE)}`,
    fix: `chmod ${octal(CREDENTIALS_MODE)} ${credentialsFile}`,
  };
}

// The fixes name the bare command: the CLI adds what is in force when it shows them (--root, --node: invocation.ts).
function checkLayout(layout: InstallLayout): DoctorCheck {
  const fix = 'sudo swarm-node install';
  const missing: string[] = [];
  for (const dir of [layout.home, layout.etcDir, layout.varDir, layout.releasesDir]) if (!isDirectory(dir)) missing.push(`${dir}/`);
  for (const file of [layout.configFile, layout.credentialsFile, layout.uninstallScript]) if (!existsSync(file)) missing.push(file);
  const current = readLink(layout.currentLink);
  if (current === undefined || current === 'not-a-link') missing.push(`${layout.currentLink} (a link to releases/<version>)`);
  else if (!existsSync(join(layout.currentLink, 'bin', 'swarm-node.js'))) missing.push(`${layout.currentLink} -> ${current} (dangling)`);
  if (!existsSync(layout.binLink)) missing.push(`${layout.binLink} (a link to the current release)`);
  if (missing.length > 0) return { name: 'layout', status: 'fail', detail: `missing: ${missing.join(', ')}`, fix };
  return { name: 'layout', status: 'ok', detail: `${layout.home}, current -> ${String(current)}` };
}

async function checkModesAndOwners(layout: InstallLayout): Promise<DoctorCheck[]> {
  const problems: string[] = [];
  const fixes: string[] = [];
  const wantMode = (path: string, mode: number) => {
    if (!existsSync(path)) return;
    const actual = statSync(path).mode & 0o777;
    if (actual !== mode) {
      problems.push(`${path} is ${octal(actual)}, should be ${octal(mode)}`);
      fixes.push(`chmod ${octal(mode)} ${path}`);
    }
  };
  wantMode(layout.credentialsFile, CREDENTIALS_MODE);
  wantMode(layout.varDir, VAR_DIR_MODE);
  wantMode(layout.environmentFile, ENVIRONMENT_FILE_MODE);
  const release = join(layout.currentLink, '.');
  if (existsSync(release) && (statSync(release).mode & 0o022) !== 0) {
    problems.push(`the current release ${release} is writable by others`);
    fixes.push(`chmod -R go-w ${layout.releasesDir}`);
  }
  let owners: DoctorCheck | undefined;
  if (layout.onHost) {
    const user = await lookupServiceUser();
    if (user === undefined) {
      owners = {
        name: 'owners',
        status: 'fail',
        detail: `the service user ${SERVICE_USER} does not exist`,
        fix: 'sudo swarm-node install',
      };
    } else {
      const varFiles = listFiles(layout.varDir).filter((path) => path !== layout.backupsDir);
      const wrong = [layout.credentialsFile, layout.varDir, ...varFiles].filter(
        (path) => existsSync(path) && statSync(path).uid !== user.uid,
      );
      owners =
        wrong.length === 0
          ? { name: 'owners', status: 'ok', detail: `credentials and var/ belong to ${SERVICE_USER}` }
          : {
              name: 'owners',
              status: 'fail',
              detail: `not owned by ${SERVICE_USER}: ${wrong.join(', ')} (the service cannot read or write them)`,
              fix: `chown ${SERVICE_USER}:${SERVICE_USER} ${layout.credentialsFile} && chown -R ${SERVICE_USER}:${SERVICE_USER} ${layout.varDir}`,
            };
    }
  }
  const modes: DoctorCheck =
    problems.length === 0
      ? { name: 'modes', status: 'ok', detail: `credentials 0600, var/ ${VAR_DIR_MODE.toString(8).padStart(4, '0')}` }
      : { name: 'modes', status: 'fail', detail: problems.join('; '), fix: fixes.join(' && ') };
  return owners === undefined ? [modes] : [modes, owners];
}

/** Each unit install writes (the daemon's, the agent socket's and service's, the egress pair's) is installed as the release renders it. */
function checkUnit(layout: InstallLayout): DoctorCheck {
  const fix = `sudo ${installCommandOf(layout.name)}`;
  for (const [index, name] of NODE_UNIT_NAMES.entries()) {
    const unitFile = layout.unitFiles[index]!;
    if (!existsSync(unitFile)) return { name: 'unit', status: 'fail', detail: `${unitFile} is missing`, fix };
    if (!existsSync(join(layout.currentLink, unitInRelease(templateOf(name)))))
      return { name: 'unit', status: 'fail', detail: `the current release has no ${templateOf(name)} to compare with`, fix };
    if (
      readFileSync(unitFile, 'utf8') !==
      unitOfRelease(layout.currentLink, name, layout.name, { autoUpdate: autoUpdateOfFile(readConfigFile(layout.configFile)) })
    ) {
      return {
        name: 'unit',
        status: 'fail',
        detail: `${unitFile} differs from the release's (put local settings in a drop-in: systemctl edit ${basename(unitFile)})`,
        fix,
      };
    }
  }
  return {
    name: 'unit',
    status: 'ok',
    detail: `${layout.unitFiles.map((file) => basename(file)).join(', ')} in ${hostPathOf(layout, dirname(layout.unitFile))} match the current release`,
  };
}

/** The current release's own runtime where it ships one (the host needs no Node), else the node on systemd's PATH. */
async function checkNode(layout: InstallLayout): Promise<DoctorCheck> {
  const runtime = join(layout.currentLink, 'runtime', 'bin', 'node');
  if (existsSync(runtime)) {
    const result = await execa(runtime, ['-v'], { reject: false, stdin: 'ignore', timeout: 10_000 });
    const version = String(result.stdout).trim();
    if (result.exitCode !== 0) {
      const why = String(result.stderr).trim().split('\n')[0] ?? '';
      return {
        name: 'node',
        status: 'fail',
        detail: `the release's runtime ${hostPathOf(layout, runtime)} does not run here: ${why}`,
        fix: RUNTIME_HOST_FIX,
      };
    }
    return { name: 'node', status: 'ok', detail: `the release's own runtime, ${version}` };
  }
  const releaseRange = (readManifest(join(layout.currentLink, 'package.json')) as { engines?: { node?: unknown } }).engines?.node;
  const wanted = (typeof releaseRange === 'string' ? parseEngineRange(releaseRange) : undefined) ?? minimumNode();
  const fix = `install Node.js ${describeVersion(wanted)} into /usr/bin or /usr/local/bin (https://nodejs.org/en/download/package-manager)`;
  const node = SYSTEMD_PATH.map((dir) => join(dir, 'node')).find((path) => existsSync(path));
  if (node === undefined) {
    return {
      name: 'node',
      status: 'fail',
      detail: `no node on the service's PATH (${SYSTEMD_PATH.join(':')}); ExecStart cannot start`,
      fix,
    };
  }
  const result = await execa(node, ['-v'], { reject: false, stdin: 'ignore', timeout: 10_000 });
  const version = String(result.stdout).trim().replace(/^v/, '');
  if (result.exitCode !== 0 || !admits(wanted, version)) {
    return {
      name: 'node',
      status: 'fail',
      detail: `${node} is ${version || 'not runnable'}; swarm-node needs ${describeVersion(wanted)}`,
      fix,
    };
  }
  return { name: 'node', status: 'ok', detail: `${node} v${version}` };
}

function listFiles(dir: string): string[] {
  if (!isDirectory(dir)) return [];
  return readdirSync(dir).map((name) => join(dir, name));
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

// Where this node lives (DECISIONS.md "Node layout"), decided in one place from three inputs: the --root flag of the
// install commands, SWARM_NODE_HOME, and the entry script this program was started as (process.argv[1], passed in
// by the CLI's context; nothing else reads it).
//
// Two questions, answered from the same inputs:
// - the node's home, where every command finds its config, credentials and database: SWARM_NODE_HOME when set;
//   else, when this program runs from an installed release (<home>/releases/<version>/), that home, so a node
//   installed under a scratch --root finds its own files; else the install path;
// - the install that install, upgrade, uninstall and doctor act on: every path install writes, under a staging
//   prefix `root` (like DESTDIR): --root when given; else the install this program runs from; else the host.
// Paths written INSIDE files (the unit, uninstall.sh) are always the host paths; only where files go moves with root.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { INSTALL_PATH } from '../contract/claims.js';
import { SvcError } from '../contract/errors.js';

export const SERVICE_USER = 'svc-swarm';
/**
 * var/ may be entered but not listed by others: an agent run under a uid of its own reaches its own directory in
 * var/runs (src/node/runner/run-local.ts); the database and everything else in var/ stay 0600/0700.
 */
export const VAR_DIR_MODE = 0o711;
/** The user agent runs are started as by systemd (svc-swarm-node-agent@.service): not the daemon's. */
export const AGENT_USER = 'svc-swarm-agent';
export const UNIT_NAME = 'svc-swarm-node.service';
/** systemd listens here for agent runs and starts one sandboxed service per connection (runner/agent-exec.ts). */
export const AGENT_SOCKET_UNIT = 'svc-swarm-node-agent.socket';
export const AGENT_SERVICE_UNIT = 'svc-swarm-node-agent@.service';
/** Every unit a release ships (systemd/<name>, a template install renders), the daemon's first. */
export const UNIT_NAMES = [UNIT_NAME, AGENT_SOCKET_UNIT, AGENT_SERVICE_UNIT] as const;
export const UNIT_HOST_PATH = unitHostPath(UNIT_NAME);
export const BIN_LINK_HOST_PATH = '/usr/local/bin/swarm-node';

export function unitHostPath(name: string): string {
  return `/etc/systemd/system/${name}`;
}

export function unitInRelease(name: string): string {
  return join('systemd', name);
}

export interface LocationInputs {
  /** The --root flag of an install command; undefined elsewhere. */
  root?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** The script this program was started as (bin/swarm-node.js), if known. */
  entryScript: string | undefined;
}

export interface NodePaths {
  home: string;
  etcDir: string;
  configFile: string;
  credentialsFile: string;
  varDir: string;
  databaseFile: string;
  releasesDir: string;
  currentLink: string;
  uninstallScript: string;
}

export interface InstallLayout extends NodePaths {
  /** The staging prefix; '/' on a real host. */
  root: string;
  /** True when root is the host itself: only then are users, owners and systemd touched. */
  onHost: boolean;
  unitFile: string;
  /** Every unit's file (UNIT_NAMES, in that order): the daemon's, then the agent socket's and service's. */
  unitFiles: string[];
  binLink: string;
  /** Proxy variables for the service (EnvironmentFile=- in the unit). */
  environmentFile: string;
  /** The release `current` pointed at before the last switch; `upgrade --rollback` goes back to it. */
  previousLink: string;
  backupsDir: string;
}

/** The node's home and its files, for every command but the install commands. */
export function homePaths(inputs: LocationInputs): NodePaths {
  const fromEnv = inputs.env.SWARM_NODE_HOME;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return nodePaths(fromEnv);
  return nodePaths(installedHomeOf(inputs.entryScript) ?? INSTALL_PATH);
}

/** The install that install, upgrade, uninstall and doctor act on. */
export function installTarget(inputs: LocationInputs): InstallLayout {
  if (inputs.root !== undefined) {
    if (inputs.root.trim() === '') throw new SvcError('usage', '--root needs a directory');
    return installLayout(inputs.root);
  }
  const installedHome = installedHomeOf(inputs.entryScript);
  return installedHome === undefined ? installLayout('/') : layoutOfHome(installedHome);
}

export function nodePaths(home: string): NodePaths {
  return {
    home,
    etcDir: join(home, 'etc'),
    configFile: join(home, 'etc', 'config.json'),
    credentialsFile: join(home, 'etc', 'credentials.json'),
    varDir: join(home, 'var'),
    databaseFile: join(home, 'var', 'swarm-node.db'),
    releasesDir: join(home, 'releases'),
    currentLink: join(home, 'current'),
    uninstallScript: join(home, 'uninstall.sh'),
  };
}

export function installLayout(root = '/'): InstallLayout {
  const absoluteRoot = resolve(root);
  const at = (hostPath: string) => join(absoluteRoot, hostPath);
  const paths = nodePaths(at(INSTALL_PATH));
  return {
    ...paths,
    root: absoluteRoot,
    onHost: absoluteRoot === '/',
    unitFile: at(UNIT_HOST_PATH),
    unitFiles: UNIT_NAMES.map((name) => at(unitHostPath(name))),
    binLink: at(BIN_LINK_HOST_PATH),
    environmentFile: join(paths.etcDir, 'environment'),
    previousLink: join(paths.home, 'previous'),
    backupsDir: join(paths.varDir, 'backups'),
  };
}

/**
 * The layout a node home belongs to: an installed binary knows its home, and a home at <root>/opt/svc/swarm-node
 * gives the root back, so commands run from a scratch-root install find their unit too.
 */
export function layoutOfHome(home: string): InstallLayout {
  const absoluteHome = resolve(home);
  if (absoluteHome === INSTALL_PATH) return installLayout('/');
  if (absoluteHome.endsWith(INSTALL_PATH)) return installLayout(absoluteHome.slice(0, -INSTALL_PATH.length));
  throw new SvcError('usage', `${absoluteHome} is not an install location (expected <root>${INSTALL_PATH})`, {
    remedy: 'Pass --root <dir> for a node installed under a staging root, or unset SWARM_NODE_HOME.',
  });
}

export function releaseDir(layout: InstallLayout, version: string): string {
  return join(layout.releasesDir, version);
}

/** The host path of a file under the layout's root (what a person types on the host). */
export function hostPathOf(layout: InstallLayout, path: string): string {
  const inside = relative(layout.root, path);
  return `/${inside.split(sep).join('/')}`;
}

/** The home of the release that `entryScript` (bin/swarm-node.js) belongs to, if it is an installed one. */
function installedHomeOf(entryScript: string | undefined): string | undefined {
  if (entryScript === undefined) return undefined;
  let real: string;
  try {
    real = realpathSync(entryScript);
  } catch {
    return undefined;
  }
  const packageDir = dirname(dirname(real));
  return basename(dirname(packageDir)) === 'releases' ? dirname(dirname(packageDir)) : undefined;
}

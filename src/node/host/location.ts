// Where this node lives (docs/decisions/0010-node-layout.md), decided in one place from three inputs: the --root
// flag of the install commands, SWARM_NODE_HOME, and the entry script this program was started as (process.argv[1],
// passed in by the CLI's context; nothing else reads it).
//
// Two questions, answered from the same inputs:
// - the node's home, where every command finds its config, credentials and database: SWARM_NODE_HOME when set;
//   else, when this program runs from an installed release (<home>/releases/<version>/), that home, so a node
//   installed under a scratch --root finds its own files; else the install path;
// - the install that install, upgrade, uninstall and doctor act on: every path install writes, under a staging
//   prefix `root` (like DESTDIR): --root when given; else the install this program runs from; else the host.
// Paths written INSIDE files (the unit, uninstall.sh) are always the host paths; only where files go moves with root.
//
// Several nodes on one host (docs/operations.md "Several nodes on one host"): the default node (no name) lives at the
// install path with today's unit names; a node named N lives at <install path>/nodes/N with the same inner layout and
// units of its own (nodeUnits). The name comes from --node (install --name) or SWARM_NODE_NAME; a program running
// from N's release knows N by itself.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { NODE_NAME_PATTERN } from '../../contract/node-name.js';
import { UUID_PATTERN } from '../../contract/uuid.js';
import { DEFAULT_AGENT_SOCKET, egressSocketOf } from './config.js';

export const SERVICE_USER = 'svc-swarm';
/**
 * var/ may be entered but not listed by others: an agent run under a user of its own reaches its bundle in
 * var/agents by its digest (src/node/runner/bundle-install.ts); the database and everything else in var/ stay
 * 0600/0700.
 */
export const VAR_DIR_MODE = 0o711;
/** The agent runs' user of installs before each node's runs had a dynamic user of their own; install still makes it. */
export const AGENT_USER = 'svc-swarm-agent';
export const UNIT_NAME = 'svc-swarm-node.service';
/** systemd listens here for agent runs and starts one sandboxed service per connection (runner/agent-exec.ts). */
export const AGENT_SOCKET_UNIT = 'svc-swarm-node-agent.socket';
export const AGENT_SERVICE_UNIT = 'svc-swarm-node-agent@.service';
/**
 * The pair for agents whose agent.json asks for egress (docs/operations.md "Agent isolation"): rendered from the
 * agent pair's templates with the host's network (install/unit-file.ts), not shipped as templates of their own. Not
 * svc-swarm-node-agent-egress: that is the agent socket of a node named egress.
 */
export const EGRESS_SOCKET_UNIT = 'svc-swarm-node-egress-agent.socket';
export const EGRESS_SERVICE_UNIT = 'svc-swarm-node-egress-agent@.service';
/** Every unit a release ships (systemd/<name>, a template install renders), the daemon's first. */
export const UNIT_NAMES = [UNIT_NAME, AGENT_SOCKET_UNIT, AGENT_SERVICE_UNIT] as const;
/** Every unit install writes for the default node, in the order of InstallLayout.unitFiles: the release's, then the egress pair. */
export const NODE_UNIT_NAMES = [...UNIT_NAMES, EGRESS_SOCKET_UNIT, EGRESS_SERVICE_UNIT] as const;
export const UNIT_HOST_PATH = unitHostPath(UNIT_NAME);
export const BIN_LINK_HOST_PATH = '/usr/local/bin/swarm-node';
/** Where named nodes live, under the install path (and so under --root). */
export const NODES_DIR = 'nodes';

/** The name, checked; `from` names where it came from in the error (--node, --name, SWARM_NODE_NAME). */
export function checkNodeName(name: string, from = '--node'): string {
  if (!NODE_NAME_PATTERN.test(name)) {
    throw new SvcError(
      'usage',
      `${from} ${JSON.stringify(name)} is not a node name: a lower-case letter, then up to 30 lower-case letters, digits or '-'`,
      {
        remedy: new RegExp(UUID_PATTERN).test(name)
          ? `${from} names a node of this host (install --name), not a node id; a node's runs: swarm-node runs --node-id ${name}.`
          : 'Choose a name such as gpu or build-2.',
      },
    );
  }
  return name;
}

/** The units of one node: the default node's are today's; a named node's carry its name (see the docs for why). */
export interface NodeUnits {
  daemon: string;
  agentSocket: string;
  /** The template systemd starts per connection of agentSocket (Accept=yes: the socket's name with '@'). */
  agentService: string;
  /** The socket and template of the runs of agents that ask for egress, the agent pair's twins but for the network. */
  egressSocket: string;
  egressService: string;
}

export function nodeUnits(name?: string): NodeUnits {
  if (name === undefined)
    return {
      daemon: UNIT_NAME,
      agentSocket: AGENT_SOCKET_UNIT,
      agentService: AGENT_SERVICE_UNIT,
      egressSocket: EGRESS_SOCKET_UNIT,
      egressService: EGRESS_SERVICE_UNIT,
    };
  checkNodeName(name);
  // The daemon as an instance name (systemctl status svc-swarm-node@N), written as a file of its own so that each
  // node's unit comes from its own release. The agent pair cannot be instances: an accepting socket starts
  // <socket name>@<connection>.service, so an instance socket would share the template across nodes.
  return {
    daemon: `svc-swarm-node@${name}.service`,
    agentSocket: `svc-swarm-node-agent-${name}.socket`,
    agentService: `svc-swarm-node-agent-${name}@.service`,
    egressSocket: `svc-swarm-node-egress-agent-${name}.socket`,
    egressService: `svc-swarm-node-egress-agent-${name}@.service`,
  };
}

/** The command, run as root, that (re)installs a node and renders its units from the release it runs. */
export function installCommandOf(name?: string): string {
  return name === undefined ? 'swarm-node install' : `swarm-node install --name ${checkNodeName(name)}`;
}

/** A node's units in the order of NODE_UNIT_NAMES (InstallLayout.unitFiles). */
export function unitsInOrder(units: NodeUnits): string[] {
  return [units.daemon, units.agentSocket, units.agentService, units.egressSocket, units.egressService];
}

/** The agent unit's StateDirectory= of a node (under /var/lib): its agents' state, outside the node's home. */
export function agentStateDirectoryName(name?: string): string {
  return name === undefined ? 'svc-swarm-node-agents' : `svc-swarm-node-agents-${checkNodeName(name)}`;
}

/**
 * Where a node's agents keep their state under systemd: its StateDirectory=, and where systemd kept it while the
 * agent unit had a dynamic user (/var/lib/private). `uninstall --purge` removes both.
 */
export function agentStateHostPaths(name?: string): string[] {
  return [`/var/lib/${agentStateDirectoryName(name)}`, `/var/lib/private/${agentStateDirectoryName(name)}`];
}

/** The host path a node lives at. */
export function nodeInstallPath(name?: string): string {
  return name === undefined ? INSTALL_PATH : `${INSTALL_PATH}/${NODES_DIR}/${checkNodeName(name)}`;
}

/** Where the node's agent socket listens: two nodes' agent runs never share one. */
export function agentSocketPath(name?: string): string {
  return name === undefined ? DEFAULT_AGENT_SOCKET : `/run/svc-swarm-node/${NODES_DIR}/${checkNodeName(name)}/agent.sock`;
}

/** Where the node's egress agent socket listens: beside its agent socket. */
export function egressSocketPath(name?: string): string {
  return egressSocketOf(agentSocketPath(name));
}

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
  /** --node (install --name), else SWARM_NODE_NAME: the named node to act on; undefined: the one this program runs from. */
  nodeName?: string | undefined;
}

export interface NodePaths {
  home: string;
  /** The node's name when its home is <install path>/nodes/<name> (a named node); undefined for any other home. */
  name: string | undefined;
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
  /** The agents' state under systemd (agentStateHostPaths), under root. */
  agentStateDirs: string[];
  units: NodeUnits;
  /** True when root is the host itself: only then are users, owners and systemd touched. */
  onHost: boolean;
  unitFile: string;
  /** Every unit's file (NODE_UNIT_NAMES, in that order): the daemon's, the agent socket's and service's, the egress pair's. */
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
  const installed = installedNodeOf(inputs.entryScript);
  const base = installed?.base ?? INSTALL_PATH;
  const name = inputs.nodeName ?? installed?.name;
  return nodePaths(name === undefined ? base : join(base, NODES_DIR, checkNodeName(name)));
}

/** The install that install, upgrade, uninstall and doctor act on. */
export function installTarget(inputs: LocationInputs): InstallLayout {
  if (inputs.root !== undefined) {
    if (inputs.root.trim() === '') throw new SvcError('usage', '--root needs a directory');
    return installLayout(inputs.root, inputs.nodeName);
  }
  const installed = installedNodeOf(inputs.entryScript);
  if (installed === undefined) return installLayout('/', inputs.nodeName);
  const layout = layoutOfHome(installed.base);
  return installLayout(layout.root, inputs.nodeName ?? installed.name);
}

export function nodePaths(home: string): NodePaths {
  return {
    home,
    name: namedHome(home)?.name,
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

export function installLayout(root = '/', name?: string): InstallLayout {
  const absoluteRoot = resolve(root);
  const at = (hostPath: string) => join(absoluteRoot, hostPath);
  const paths = nodePaths(at(nodeInstallPath(name)));
  const units = nodeUnits(name);
  return {
    ...paths,
    root: absoluteRoot,
    name,
    units,
    onHost: absoluteRoot === '/',
    unitFile: at(unitHostPath(units.daemon)),
    unitFiles: unitsInOrder(units).map((unit) => at(unitHostPath(unit))),
    binLink: at(BIN_LINK_HOST_PATH),
    agentStateDirs: agentStateHostPaths(name).map(at),
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
  const named = namedHome(absoluteHome);
  if (named !== undefined) return installLayout(layoutOfHome(named.base).root, named.name);
  if (absoluteHome === INSTALL_PATH) return installLayout('/');
  if (absoluteHome.endsWith(INSTALL_PATH)) return installLayout(absoluteHome.slice(0, -INSTALL_PATH.length));
  throw new SvcError('usage', `${absoluteHome} is not an install location (expected <root>${INSTALL_PATH})`, {
    remedy: 'Name the staging root a node was installed under with --root, or unset SWARM_NODE_HOME.',
  });
}

/** The install a home is (<root>/opt/svc/swarm-node, or a named node's under it); undefined for any other home. */
export function installOfHome(home: string): InstallLayout | undefined {
  try {
    return layoutOfHome(home);
  } catch {
    return undefined;
  }
}

export function releaseDir(layout: InstallLayout, version: string): string {
  return join(layout.releasesDir, version);
}

/** The host path of a file under the layout's root (what a person types on the host). */
export function hostPathOf(layout: InstallLayout, path: string): string {
  const inside = relative(layout.root, path);
  return `/${inside.split(sep).join('/')}`;
}

/** The install path and node name of the release `entryScript` belongs to, if it is an installed one. */
function installedNodeOf(entryScript: string | undefined): { base: string; name: string | undefined } | undefined {
  const home = installedHomeOf(entryScript);
  if (home === undefined) return undefined;
  return namedHome(home) ?? { base: home, name: undefined };
}

/** <base>/nodes/<name>: a named node's home, split; undefined for any other path. */
function namedHome(home: string): { base: string; name: string } | undefined {
  const name = basename(home);
  if (basename(dirname(home)) !== NODES_DIR || !NODE_NAME_PATTERN.test(name)) return undefined;
  return { base: dirname(dirname(home)), name };
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

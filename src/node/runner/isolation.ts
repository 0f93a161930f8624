// How an agent run is kept from the node and from other tenants on this host (spec §1.6, docs/operations.md "Agent
// isolation"), without a container runtime:
//   systemd     an installed node: systemd starts each run as a service of its own (svc-swarm-node-agent@.service),
//               as a uid of its agent's own on this node (./agent-ids.ts), with the unit's sandbox and cgroup limits.
//   bubblewrap  elsewhere: each run in a bubblewrap sandbox made for it (./sandbox.ts), under the package's system-call
//               filter for this architecture (./syscall-filter.ts), which an installed root node will not go without
//               unless its config says so (agent_syscall_filter optional). As root: under a uid of the
//               agent's own on this home (./agent-ids.ts), in a cgroup of its own (./cgroups.ts), its state in an
//               image of its own (./state-image.ts). Unprivileged: as the node's user in a user namespace, in a
//               cgroup only where the daemon's own is delegated to it, its state a plain directory.
//   unshare     root only, asked for by name (never `auto`'s): what bubblewrap's root mode does, with util-linux's
//               unshare and setpriv in place of bwrap (./sandbox.ts unshareArgv), for a host without bubblewrap;
//               no system-call filter (docs/decisions/0027-unshare-mode.md).
//   none        the node's own user, no sandbox: a clean environment and per-process limits only (asked for by
//               name, or what an unprivileged node without user namespaces gets, which says so: isolationFallback).
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { egressSocketOf, type AgentIsolation } from '../host/config.js';
import { installCommandOf, nodeUnits } from '../host/location.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import { stateImageSupport, type SandboxSupport } from './state-image-probe.js';
import { isInstalledRelease, syscallFilterOf, type AgentSyscallFilter } from './syscall-filter.js';

/** How many runs a node executes at once, at most (config concurrency; the agent socket's MaxConnections). */
export const MAX_RUN_SLOTS = 32;

export type IsolationMode = 'systemd' | 'bubblewrap' | 'unshare' | 'none';

export interface RunIdentity {
  uid: number;
  gid: number;
}

/** Whether this process sets up sandboxes as root: a uid per agent, cgroups and state images of its own making. */
export function isPrivileged(): boolean {
  return process.geteuid?.() === 0;
}

export type { SandboxSupport };

let support: SandboxSupport | undefined;

/**
 * Whether bubblewrap can make a sandbox here, tried once per process: installed, and (as root) allowed to make
 * namespaces, which a container without CAP_SYS_ADMIN refuses; (unprivileged) allowed user namespaces, which a
 * kernel or an AppArmor policy may refuse.
 */
export function sandboxSupport(): SandboxSupport {
  if (support !== undefined) return support;
  const probe = spawnSync(
    'bwrap',
    [...(isPrivileged() ? [] : ['--unshare-user']), '--ro-bind', '/', '/', '--unshare-pid', '--', '/bin/true'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
    },
  );
  if (probe.error !== undefined) {
    support = {
      available: false,
      reason:
        (probe.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'bubblewrap is not installed (bwrap)' : `bwrap: ${probe.error.message}`,
    };
  } else if (probe.status !== 0) {
    const said = probe.stderr.toString().trim().split('\n').pop() ?? '';
    support = {
      available: false,
      reason: `bubblewrap cannot make a sandbox here${isPrivileged() ? '' : ' (user namespaces)'}: ${said || `exit ${String(probe.status)}`}`,
    };
  } else {
    support = { available: true };
  }
  return support;
}

let unshareSupported: SandboxSupport | undefined;

/**
 * Whether util-linux can make the `unshare` mode's sandbox here, tried once per process: as root, the namespaces of a
 * run (./sandbox.ts unshareArgv, the network's included), and setpriv's switch to another uid with no way back.
 */
export function unshareSupport(): SandboxSupport {
  if (unshareSupported !== undefined) return unshareSupported;
  if (!isPrivileged())
    return (unshareSupported = { available: false, reason: 'agent_isolation unshare needs root (it gives each agent a uid of its own)' });
  const probe = spawnSync(
    'setpriv',
    [
      ...unshareLauncher({ network: false }).slice(1),
      'setpriv',
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--no-new-privs',
      '--',
      '/bin/true',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 },
  );
  if (probe.error !== undefined) {
    const missing = (probe.error as NodeJS.ErrnoException).code === 'ENOENT';
    unshareSupported = { available: false, reason: missing ? 'util-linux setpriv is not installed' : `setpriv: ${probe.error.message}` };
  } else if (probe.status !== 0) {
    const said = probe.stderr.toString().trim().split('\n').pop() ?? '';
    unshareSupported = { available: false, reason: `unshare cannot make a sandbox here: ${said || `exit ${String(probe.status)}`}` };
  } else {
    unshareSupported = { available: true };
  }
  return unshareSupported;
}

/** The namespaces of an `unshare` run but the network's (./sandbox.ts), and its /proc: what the probe tries too. */
export const UNSHARE_NAMESPACES = ['--pid', '--kill-child', '--mount-proc', '--propagation', 'private', '--ipc', '--uts', '--cgroup'];

/**
 * What starts a run of the `unshare` mode, its probe's included: setpriv, so the run dies with its launcher, then
 * unshare with the run's namespaces (its network's too when the run has none), up to the `--` before the command.
 */
export function unshareLauncher(options: { network: boolean }): string[] {
  return ['setpriv', '--pdeathsig', 'KILL', '--', 'unshare', ...UNSHARE_NAMESPACES, ...(options.network ? [] : ['--net']), '--'];
}

/**
 * Said on every `run` and in `status` of a node that runs agents unsandboxed although it did not ask to (`auto` on
 * an unprivileged node where bubblewrap cannot make a sandbox), with why and the fix; undefined otherwise.
 */
export function isolationFallback(wanted: AgentIsolation, mode: IsolationMode): string | undefined {
  if (wanted !== 'auto' || mode !== 'none') return undefined;
  const sandbox = sandboxSupport();
  const why = sandbox.available ? 'bubblewrap' : sandbox.reason;
  return `agents run unsandboxed, as the node's own user (agent_isolation auto fell back to none: ${why}); apt-get install bubblewrap gives each run a sandbox`;
}

const INSTALL_BUBBLEWRAP = 'Install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap)';

/**
 * `auto`: systemd's agent socket when it listens (an installed node), else bubblewrap when it can make a sandbox
 * here, else (an unprivileged node only) the node's own user. Root never falls back to running agents unsandboxed:
 * they would run as root. An installed release run as root without a system-call filter for this architecture
 * refuses bubblewrap as it refuses running without it, unless `filter` is `optional` (`packageDir`: the release).
 */
export function resolveIsolation(
  wanted: AgentIsolation,
  agentSocket: string,
  filter: AgentSyscallFilter = 'auto',
  packageDir?: string,
): IsolationMode {
  if (wanted === 'none') return 'none';
  if (wanted === 'unshare') {
    const made = unshareSupport();
    if (made.available) return withStateImages('unshare');
    throw new SvcError('local_state', `agents cannot run isolated on this host: ${made.reason}`, {
      remedy: isPrivileged()
        ? 'Install util-linux (apt-get install util-linux), or install bubblewrap (apt-get install bubblewrap) and set agent_isolation to auto.'
        : 'Run the node as root for agent_isolation unshare, or set agent_isolation to auto or none.',
    });
  }
  if (wanted === 'systemd' || (wanted === 'auto' && isSocket(agentSocket))) return 'systemd';
  const sandbox = sandboxSupport();
  if (sandbox.available) {
    const release = packageDir ?? runningPackageDir();
    const found = syscallFilterOf(release);
    if (found.path !== undefined || filter === 'optional' || !isPrivileged() || !isInstalledRelease(release))
      return withStateImages('bubblewrap');
    throw new SvcError('local_state', `agents cannot run isolated on this host: ${found.missing}`, {
      remedy:
        `Install a release built for linux-${process.arch}, or install the node with systemd (swarm-node install); ` +
        'agent_syscall_filter optional runs agents under bubblewrap without the filter.',
    });
  }
  if (wanted === 'auto' && !isPrivileged()) return 'none';
  throw new SvcError('local_state', `agents cannot run isolated on this host: ${sandbox.reason}`, {
    remedy: isPrivileged()
      ? `${INSTALL_BUBBLEWRAP} (in a container, run it with CAP_SYS_ADMIN), or install the node with systemd (swarm-node install); agent_isolation none runs agents as root, unsandboxed.`
      : `${INSTALL_BUBBLEWRAP}, or set agent_isolation to auto or none.`,
  });
}

/** A root sandbox mode, where its runs' state images can be made and mounted here (./state-image-probe.ts). */
function withStateImages(mode: 'bubblewrap' | 'unshare'): IsolationMode {
  if (!isPrivileged()) return mode;
  const images = stateImageSupport();
  if (images.available) return mode;
  throw new SvcError('local_state', `agents cannot run isolated on this host: ${images.reason}`, {
    remedy:
      'Install e2fsprogs (apt-get install e2fsprogs) on a host with loop devices, or install the node with systemd (swarm-node install); agent_isolation none runs agents as root, unsandboxed.',
  });
}

/**
 * Under systemd, why an agent that asks for egress cannot run here, with the fix; undefined when it can. A node whose
 * units predate the egress pair (an older swarm-node upgraded it, and renders only the units it knows) has none: its
 * install, run again from the release it runs, writes and starts them.
 */
export function egressUnavailable(agentSocket: string, nodeName: string | undefined): string | undefined {
  const socket = egressSocketOf(agentSocket);
  if (isSocket(socket)) return undefined;
  return `no egress agent socket listens at ${socket}: this node's systemd units predate egress runs (run, as root: ${installCommandOf(nodeName)}), or its socket is stopped (systemctl start ${nodeUnits(nodeName).egressSocket})`;
}

function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

// What the runs of this node are held to, and what they are not, in the words `status` and `doctor` print
// (docs/operations.md "Agent isolation", the table of what each mode enforces).
import { existsSync } from 'node:fs';
import { runningPackageDir } from '../../lib/package-dir.js';
import { probeCgroups } from './cgroup-probe.js';
import { egressUnavailable, isPrivileged, type IsolationMode } from './isolation.js';
import { syscallFilterOf } from './syscall-filter.js';

export interface IsolationReport {
  /** One line: how each run is kept apart. */
  summary: string;
  /** What runs here are not held to, each with why. */
  cannot: string[];
}

/**
 * `node`: under systemd, the node's agent socket and name, to tell whether its egress agent socket listens.
 * `packageDir`: the package the runs take their system-call filter from (bubblewrap).
 */
export function isolationReport(
  mode: IsolationMode,
  node?: { agentSocket: string; name: string | undefined },
  packageDir: string = runningPackageDir(),
): IsolationReport {
  if (mode === 'systemd') {
    const egress = node === undefined ? undefined : egressUnavailable(node.agentSocket, node.name);
    return {
      summary:
        "systemd: each run a service of its own (svc-swarm-node-agent@.service; an agent asking for egress, svc-swarm-node-egress-agent@.service) as a uid of its agent's own, cgroup limits, its state in an image of its own, no network but for egress agents",
      cannot: [...noLoopDevices(), ...(egress === undefined ? [] : [`agents whose agent.json asks for egress fail: ${egress}`])],
    };
  }
  if (mode === 'none') {
    return {
      summary: "none: runs as the node's own user, unsandboxed (a clean environment and per-process limits only)",
      cannot: [
        "an agent can read what the node's user can: its credential and database included",
        'memory, tasks and CPU are limited per process only (RLIMIT_DATA), not per run; disk per file only',
        "the network is the host's; a process that leaves its process group outlives the run's stop",
      ],
    };
  }
  const cgroups = probeCgroups();
  if (mode === 'unshare') {
    const cannot = [
      "no system call filter (setpriv loads none): the kernel's whole surface is the agent's, keyrings included",
      "the host's files are as any user sees them, not read-only (the agent's uid owns nothing there; /tmp, /dev/shm, /var/tmp and /run/lock are the run's own); its /dev is the host's",
      ...(cgroups.version === null
        ? [`no memory, task or CPU limit per run (${cgroups.reason}): only RLIMIT_DATA per process and RLIMIT_NPROC per agent's uid`]
        : []),
      ...noLoopDevices(),
    ];
    return {
      summary: `unshare: each run in namespaces of its own (util-linux), as a uid of its agent's own, ${limitsBy(cgroups.version)}, its state in an image of its own`,
      cannot,
    };
  }
  const filter = syscallFilterOf(packageDir);
  const filtered = filter.path === undefined ? '' : ', a system call filter';
  const cannot: string[] = [];
  if (filter.path === undefined) cannot.push(`${filter.missing}: the kernel's whole surface is the agent's, keyrings included`);
  if (cgroups.version === null) {
    cannot.push(
      `no memory, task or CPU limit per run (${cgroups.reason}): only RLIMIT_DATA per process${isPrivileged() ? " and RLIMIT_NPROC per agent's uid" : ''}`,
    );
  }
  if (isPrivileged()) {
    cannot.push(...noLoopDevices());
    const summary = `bubblewrap: each run in a sandbox of its own, as a uid of its agent's own, ${limitsBy(cgroups.version)}`;
    return { summary: `${summary}, its state in an image of its own${filtered}`, cannot };
  }
  cannot.push(
    "every agent runs as the node's own user (a user namespace, no uid of its own); each sees only its own state",
    'the state directory has no size cap (a state image needs root): 64 MiB per file only',
  );
  const summary = `bubblewrap in a user namespace: each run in a sandbox of its own, as the node's user, ${limitsBy(cgroups.version)}`;
  return { summary: `${summary}${filtered}`, cannot };
}

/** Where runs mount a state image (systemd, bubblewrap as root): what fails without loop devices. */
function noLoopDevices(): string[] {
  return existsSync('/dev/loop-control')
    ? []
    : ['no loop devices here (/dev/loop-control): runs fail, since their state image cannot be mounted'];
}

function limitsBy(version: 'v1' | 'v2' | null): string {
  return version === null ? 'no cgroup' : `limits in a cgroup (${version})`;
}

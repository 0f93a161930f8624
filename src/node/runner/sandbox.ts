// The bubblewrap sandbox one run executes in (docs/operations.md "Agent isolation"), as its argument list: the
// host read-only, a /proc, /dev, /tmp and /dev/shm of its own (the last two size-limited tmpfs, in its memory),
// the node's home and the host's home directories out of sight, the bundle and what it runs with bound read-only
// at their own paths, its state directory the only writable place it keeps (and its artifacts directory, until they
// are uploaded); its own mount, pid, IPC, UTS and cgroup namespaces, and its own network namespace (loopback only)
// unless its manifest asks for egress; the system-call filter (./syscall-filter.ts) on every process in it
// (unprivileged: in the agent's own pid namespace in it). It dies with the daemon (--die-with-parent: the sandbox's
// pid 1 goes, and the kernel ends every process of its pid namespace with it).
import { existsSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import type { AgentNetwork } from '../../contract/agent-bundle.js';
import type { RunIdentity } from './isolation.js';

export interface SandboxSpec {
  /** root: the agent's own uid and gid, taken by setpriv inside; undefined: this user, in a user namespace of its own. */
  identity: RunIdentity | undefined;
  /** Out of sight: the node's home and var/ (credentials, database, other agents' state, other bundles). */
  hidden: readonly string[];
  /** Bound read-only at their own paths: the bundle, the Node runtime, the docs, the package's node_modules. */
  readOnly: readonly string[];
  /** The agent's state: `source` on the host, writable at `target`. */
  state?: { source: string; target: string };
  /** The run's artifacts directory (./artifact-space.ts), writable at its own path. */
  artifacts?: string;
  /** The size of each of /tmp and /dev/shm. */
  tmpBytes: number;
  network: AgentNetwork;
  /** The descriptor bwrap reads the system-call filter from (--seccomp), opened by whoever starts it; none: no filter. */
  syscallFilterFd?: number;
}

/** What systemd's ProtectHome= hides: home directories are people's, not an agent's. */
const HOME_DIRECTORIES = ['/home', '/root', '/run/user'];
/** A tmpfs that hides a directory holds the few directories on the way to a bind. */
const HIDDEN_TMPFS_BYTES = 1024 * 1024;
/** The run's own /tmp (its directory, HOME and TMPDIR) and /dev/shm. */
const FRESH = ['/tmp', '/dev/shm'];

/** bwrap and its options, ending with `--`: the program to run inside follows. */
export function bubblewrapArgv(spec: SandboxSpec): string[] {
  const binds = spec.readOnly.map((path) => ({ source: resolve(path), target: resolve(path), writable: false }));
  if (spec.state !== undefined) binds.push({ source: resolve(spec.state.source), target: resolve(spec.state.target), writable: true });
  if (spec.artifacts !== undefined) binds.push({ source: resolve(spec.artifacts), target: resolve(spec.artifacts), writable: true });

  const hidden = [...HOME_DIRECTORIES, ...spec.hidden].map((path) => resolve(path)).filter((path) => existsSync(path));
  // A path the agent needs under a directory other users may not pass (a checkout in root's 0700 home, a mkdtemp)
  // is out of its reach at its own path: an empty directory it may pass takes the closed one's place in the sandbox,
  // and the path is bound into it.
  for (const target of [...binds.map((bind) => bind.target), ...hidden]) {
    if (under(target, FRESH)) continue;
    const closed = closedAncestor(target);
    if (closed !== undefined && !under(closed, hidden)) hidden.push(closed);
  }
  const tmpfs = [...new Set(hidden)].filter((path, _, all) => !under(path, FRESH) && !all.some((other) => other !== path && isWithin(path, other)));
  const roots = [...FRESH, ...tmpfs];

  const argv = ['bwrap', ...(spec.identity === undefined ? ['--unshare-user'] : [])];
  argv.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  const mounts = [
    ...FRESH.map((target) => ({ target, args: ['--perms', '1777', '--size', String(spec.tmpBytes), '--tmpfs', target] })),
    ...tmpfs.map((target) => ({ target, args: ['--perms', '0755', '--size', String(HIDDEN_TMPFS_BYTES), '--tmpfs', target] })),
    ...binds.map(({ source, target, writable }) => ({ target, args: [writable ? '--bind' : '--ro-bind', source, target] })),
  ];
  // Directories bubblewrap makes on the way to a mount inside a tmpfs are 0700 root: made here 0755, so the agent passes.
  const made = new Set<string>();
  for (const mount of mounts.sort((a, b) => depth(a.target) - depth(b.target))) {
    for (const dir of ancestorsWithin(mount.target, roots)) {
      if (made.has(dir)) continue;
      made.add(dir);
      argv.push('--perms', '0755', '--dir', dir);
    }
    argv.push(...mount.args);
  }
  // What hides a directory holds only the ways to what is bound in it: read-only, so no run writes there (in a user
  // namespace it is the run's own user's, and would be room beyond its caps).
  for (const target of tmpfs) argv.push('--remount-ro', target);
  argv.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  if (spec.network === 'none') argv.push('--unshare-net');
  // bwrap applies it just before it execs the command (as root, the launcher, and setpriv after it, whose setresuid,
  // setgroups, capset and prctl it lets through), and to the sandbox's pid 1. Unprivileged, the agent's own pid
  // namespace takes it instead (ownPidNamespaceArgv).
  if (spec.syscallFilterFd !== undefined) argv.push('--seccomp', String(spec.syscallFilterFd));
  argv.push('--die-with-parent', '--new-session', '--');
  return argv;
}

/**
 * Unprivileged, where the agent's user is the launcher's: the agent in a pid namespace of its own inside the sandbox
 * (a user namespace in bubblewrap's, which alone may make one), the launcher and the sandbox's first process outside
 * it, so no process of the agent has their pid to reach them by (docs/operations.md "Agent isolation"). The system-call
 * filter goes on in here, on its first process and the agent: outside, it would refuse the namespace. It sees the
 * sandbox as it is (bound whole, devices included) with a /proc of its own, and dies with the launcher.
 */
export function ownPidNamespaceArgv(syscallFilterFd: number | undefined): string[] {
  const filter = syscallFilterFd === undefined ? [] : ['--seccomp', String(syscallFilterFd)];
  return ['bwrap', '--unshare-user', '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', ...filter, '--die-with-parent', '--'];
}

/** The user switch inside the sandbox (root only): the agent's uid and gid, no group, no capability, no way back. */
export function asAgentUser(identity: RunIdentity): string[] {
  return [
    'setpriv',
    `--reuid=${identity.uid}`,
    `--regid=${identity.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--ambient-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ];
}

/** The first directory on the way to `path` that other users may not pass (no o+x), if any. */
export function closedAncestor(path: string): string | undefined {
  const parts = resolve(path).split(sep).filter(Boolean);
  for (let index = 1; index < parts.length; index += 1) {
    const dir = `/${parts.slice(0, index).join('/')}`;
    try {
      if ((statSync(dir).mode & 0o001) === 0) return dir;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The directories between the innermost of `roots` holding `path` and `path`, outermost first. */
function ancestorsWithin(path: string, roots: readonly string[]): string[] {
  const root = roots.filter((candidate) => isWithin(path, candidate) && candidate !== path).sort((a, b) => depth(b) - depth(a))[0];
  if (root === undefined) return [];
  const dirs: string[] = [];
  for (let dir = dirname(path); dir !== root && isWithin(dir, root); dir = dirname(dir)) dirs.unshift(dir);
  return dirs;
}

function under(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => isWithin(path, root));
}

function isWithin(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

function depth(path: string): number {
  return path.split('/').length;
}

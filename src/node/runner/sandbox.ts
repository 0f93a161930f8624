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
import { unshareLauncher, type RunIdentity } from './isolation.js';

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

/** One mount of a run's sandbox, or a directory made (0755) on the way to one, in the order they are made. */
type MountStep =
  | { kind: 'dir'; path: string }
  | { kind: 'tmpfs'; target: string; mode: string; bytes: number }
  | { kind: 'bind'; source: string; target: string; writable: boolean };

interface MountPlan {
  steps: MountStep[];
  /** What hides a directory: read-only once everything is bound in it. */
  readOnlyAfter: string[];
}

/**
 * What the sandbox's file system is, whichever tool makes it (bwrap, or unshare and mount: unshareArgv): the fresh
 * directories, what hides the node's and people's files, the binds, each after what it is mounted in.
 */
function mountPlan(spec: SandboxSpec, alsoHidden: readonly string[] = []): MountPlan {
  const binds = spec.readOnly.map((path) => ({ source: resolve(path), target: resolve(path), writable: false }));
  if (spec.state !== undefined) binds.push({ source: resolve(spec.state.source), target: resolve(spec.state.target), writable: true });
  if (spec.artifacts !== undefined) binds.push({ source: resolve(spec.artifacts), target: resolve(spec.artifacts), writable: true });

  const hidden = [...HOME_DIRECTORIES, ...alsoHidden, ...spec.hidden].map((path) => resolve(path)).filter((path) => existsSync(path));
  // A path the agent needs under a directory other users may not pass (a checkout in root's 0700 home, a mkdtemp)
  // is out of its reach at its own path: an empty directory it may pass takes the closed one's place in the sandbox,
  // and the path is bound into it.
  for (const target of [...binds.map((bind) => bind.target), ...hidden]) {
    if (under(target, FRESH)) continue;
    const closed = closedAncestor(target);
    if (closed !== undefined && !under(closed, hidden)) hidden.push(closed);
  }
  const tmpfs = [...new Set(hidden)].filter(
    (path, _, all) => !under(path, FRESH) && !all.some((other) => other !== path && isWithin(path, other)),
  );
  const roots = [...FRESH, ...tmpfs];

  const mounts: MountStep[] = [
    ...FRESH.map((target) => ({ kind: 'tmpfs' as const, target, mode: '1777', bytes: spec.tmpBytes })),
    ...tmpfs.map((target) => ({ kind: 'tmpfs' as const, target, mode: '0755', bytes: HIDDEN_TMPFS_BYTES })),
    ...binds.map(({ source, target, writable }) => ({ kind: 'bind' as const, source, target, writable })),
  ];
  // Directories made on the way to a mount inside a tmpfs (bubblewrap would make them 0700 root): 0755, so the agent passes.
  const made = new Set<string>();
  const steps: MountStep[] = [];
  for (const mount of mounts.sort((a, b) => depth(targetOf(a)) - depth(targetOf(b)))) {
    for (const dir of ancestorsWithin(targetOf(mount), roots)) {
      if (made.has(dir)) continue;
      made.add(dir);
      steps.push({ kind: 'dir', path: dir });
    }
    steps.push(mount);
  }
  // What hides a directory holds only the ways to what is bound in it: read-only, so no run writes there (in a user
  // namespace it is the run's own user's, and would be room beyond its caps).
  return { steps, readOnlyAfter: tmpfs };
}

/** bwrap and its options, ending with `--`: the program to run inside follows. */
export function bubblewrapArgv(spec: SandboxSpec): string[] {
  const plan = mountPlan(spec);
  const argv = ['bwrap', ...(spec.identity === undefined ? ['--unshare-user'] : [])];
  argv.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc');
  for (const step of plan.steps) {
    if (step.kind === 'dir') argv.push('--perms', '0755', '--dir', step.path);
    else if (step.kind === 'tmpfs') argv.push('--perms', step.mode, '--size', String(step.bytes), '--tmpfs', step.target);
    else argv.push(step.writable ? '--bind' : '--ro-bind', step.source, step.target);
  }
  for (const target of plan.readOnlyAfter) argv.push('--remount-ro', target);
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
 * The world-writable directories of a host (systemd's PrivateTmp= ones, and /run/lock) that bubblewrap leaves
 * read-only with the rest of the host: the unshare mode, which leaves the host as it is, hides them, so that nothing
 * a run writes outlives it.
 */
const WORLD_WRITABLE = ['/var/tmp', '/run/lock'];

// The unshare mode's file system (unshareArgv), made by root in the run's new namespaces before the launcher starts:
// $@ the plan's steps, words of their own (below), up to `--`, then the command. Each bind's source is first bound
// into a stage (a tmpfs on /dev/shm, which no source is under) while nothing hides it yet; the fresh /dev/shm goes
// over the stage last. A failed step exits 125 (the prelude's code: the run fails `spawn`).
const UNSHARE_MOUNTS = `umask 022
fail() { echo "swarm-node sandbox: $*" >&2; exit 125; }
[ "$1" = net ] && { ! command -v ip >/dev/null 2>&1 || ip link set lo up || fail "cannot bring up the loopback"; }
shm=$2; shift 2
stage=/dev/shm
mount -t tmpfs -o size=1m,mode=0700 swarm-stage "$stage" || fail "cannot mount the stage"
n=0
while [ "$1" != -- ]; do
  case $1 in
    dir) [ -d "$2" ] || mkdir -m 0755 "$2" || fail "cannot make $2"; shift 2 ;;
    tmpfs) mount -t tmpfs -o "size=$4,mode=$3,nosuid,nodev" swarm-tmpfs "$2" || fail "cannot mount a tmpfs on $2"; shift 4 ;;
    stage) n=$((n + 1)); if [ -d "$2" ]; then mkdir "$stage/$n"; else : > "$stage/$n"; fi
      mount --bind "$2" "$stage/$n" || fail "cannot bind $2"; shift 2 ;;
    bind|ro-bind) from=$stage/$2
      [ -e "$3" ] || { if [ -d "$from" ]; then mkdir -m 0755 "$3"; else : > "$3"; fi; } || fail "cannot make $3"
      mount --bind "$from" "$3" || fail "cannot bind $3"
      [ "$1" = bind ] || mount -o remount,bind,ro "$3" || fail "cannot make $3 read-only"; shift 3 ;;
    ro) mount -o remount,ro "$2" || fail "cannot make $2 read-only"; shift 2 ;;
    *) fail "unknown step $1" ;;
  esac
done
shift
umount -R "$stage" || fail "cannot unmount the stage"
mount -t tmpfs -o "size=$shm,mode=1777,nosuid,nodev" swarm-tmpfs /dev/shm || fail "cannot mount /dev/shm"
exec "$@"`;

/**
 * The unshare mode's sandbox (root only: docs/operations.md "Agent isolation"), ending with `--`: the program to run
 * inside follows. What bubblewrap's does as root, by util-linux: new mount, pid (its own /proc), IPC, UTS and cgroup
 * namespaces, and the network's unless the run has egress; the same fresh /tmp and /dev/shm, the node's home and
 * people's homes hidden, the same binds, each by mount(8) as root before the launcher starts. Unlike bubblewrap it
 * leaves the host writable, but for what its world-writable directories are hidden by (WORLD_WRITABLE): the agent
 * runs as a uid nothing on the host belongs to; and its /dev is the host's. No system-call filter: setpriv loads none
 * before util-linux 2.40. It dies with the daemon: setpriv gives it SIGKILL at its parent's death, and unshare gives
 * its child, the pid namespace's first process (the launcher), SIGKILL at its own (--kill-child).
 */
export function unshareArgv(spec: SandboxSpec): string[] {
  if (spec.identity === undefined) throw new Error('the unshare sandbox runs as root only');
  const plan = mountPlan(spec, WORLD_WRITABLE);
  const binds = plan.steps.filter((step) => step.kind === 'bind');
  for (const bind of binds)
    if (isWithin(bind.source, '/dev/shm')) throw new Error(`cannot bind ${bind.source} into the sandbox: it is under /dev/shm`);
  const words: string[] = [];
  binds.forEach((bind) => words.push('stage', bind.source));
  for (const step of plan.steps) {
    if (step.kind === 'dir') words.push('dir', step.path);
    else if (step.kind === 'tmpfs') {
      if (step.target !== '/dev/shm') words.push('tmpfs', step.target, step.mode, String(step.bytes));
    } else words.push(step.writable ? 'bind' : 'ro-bind', String(binds.indexOf(step) + 1), step.target);
  }
  for (const target of plan.readOnlyAfter) words.push('ro', target);
  const network = spec.network !== 'none';
  return [
    ...unshareLauncher({ network }),
    '/bin/sh',
    '-c',
    UNSHARE_MOUNTS,
    'swarm-sandbox',
    network ? 'host' : 'net',
    String(spec.tmpBytes),
    ...words,
    '--',
  ];
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

function targetOf(step: MountStep): string {
  return step.kind === 'dir' ? step.path : step.target;
}

function depth(path: string): number {
  return path.split('/').length;
}

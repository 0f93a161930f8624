// One run under bubblewrap, or under unshare (docs/operations.md "Agent isolation"). The chain, each step exec'ing
// the next so the daemon stays bubblewrap's parent (--die-with-parent), or setpriv's (--pdeathsig):
//   unshare --mount (root)  a mount namespace of the run's own, for its state image: mounted there, never on the host
//   sh PRELUDE              joins the run's cgroups (so every process of the run is in them from the start), mounts
//                           the state image under its lock, opens the system-call filter for bwrap
//   bwrap …                 the sandbox (./sandbox.ts), the filter (./syscall-filter.ts) on all in it as root;
//                           or setpriv, unshare and sh, the unshare mode's: the same sandbox made by mount(8), no filter
//   prlimit, sh LAUNCHER    ./launcher.ts: root as root, out of the agent's reach
//   setpriv (root)          the agent's uid and gid, nothing else, for what is the agent's
//   bwrap (unprivileged)    the agent's own pid namespace, outside which the launcher stays; the filter from here
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AgentNetwork } from '../../contract/agent-bundle.js';
import { agentIdentity, claimedHomes } from './agent-ids.js';
import { INSTALL_PATH } from '../../contract/claims.js';
import { runAgentProcess, type AgentLimits, type AgentOutcome, type AgentProcessSpec } from './agent-process.js';
import { cgroupHost, type CgroupHost, type RunCgroup } from './cgroups.js';
import { isPrivileged } from './isolation.js';
import { asAgentUser, bubblewrapArgv, ownPidNamespaceArgv, unshareArgv } from './sandbox.js';
import { ensureStateImage, prepareStateDir, type StateImage } from './state-image.js';
import { MAX_ARTIFACT_BYTES } from '../../contract/jobs.js';
import { directoryArtifacts, type HeldArtifacts } from './artifact-source.js';
import { makeArtifactSpace, removeLeftoverRunDirs, type ArtifactSpace } from './artifact-space.js';

/** A prelude step that failed: the launcher's exit code, so the run fails `spawn` with the reason on stderr. */
const PRELUDE_FAILED = 125;
/**
 * Where bwrap reads the filter from, which it then closes: past stdio and the launcher's fds 3 and 4 (./launcher.ts).
 * The sandbox's bwrap as root; unprivileged, the launcher passes it on to the agent's own pid namespace's.
 */
const SYSCALL_FILTER_FD = 5;

// $1 how many cgroup.procs files follow, then those, then image, lock file, mount point and the agent's uid:gid
// ('' '' '' '': no image), then the system-call filter's file ('': none), then the command. flock: mount(8) reuses the
// loop device that already holds the image (a run of the same agent in flight), but two mounts racing could each
// attach one: two file systems writing one image.
const PRELUDE = `count=$1; shift
while [ "$count" -gt 0 ]; do
  echo $$ > "$1" || { echo "swarm-node sandbox: cannot join the control group $1" >&2; exit ${PRELUDE_FAILED}; }
  shift; count=$((count - 1))
done
image=$1; lock=$2; point=$3; owner=$4; filter=$5; shift 5
if [ -n "$image" ]; then
  flock -w 60 "$lock" mount -o loop,nosuid,nodev "$image" "$point" || { echo "swarm-node sandbox: cannot mount the state image $image" >&2; exit ${PRELUDE_FAILED}; }
  # The agent's own, whoever the image was made for (a uid claim given up and claimed again may be another number).
  chown "$owner" "$point" && chmod 0700 "$point" || exit ${PRELUDE_FAILED}
fi
if [ -n "$filter" ]; then
  [ -r "$filter" ] || { echo "swarm-node sandbox: cannot read the system call filter $filter" >&2; exit ${PRELUDE_FAILED}; }
  exec "$@" ${SYSCALL_FILTER_FD}<"$filter"
fi
exec "$@"`;

export interface SandboxedRunner {
  /** The outcome, and the run's artifacts directory, kept until released; its output to `onOutput` as it comes. */
  run(
    request: SandboxedRun,
    signal?: AbortSignal,
    onOutput?: AgentProcessSpec['onOutput'],
    kit?: AgentProcessSpec['kit'],
  ): Promise<{ outcome: AgentOutcome; artifacts?: HeldArtifacts }>;
  /** Kills what runs of this home that are not in flight left in their cgroups (a daemon that died), and removes them. */
  removeLeftovers(inFlight: (runId: string) => boolean): Promise<number>;
  /** What the host gives this runner: cgroups or why not (status, the daemon's start line). */
  readonly cgroups: CgroupHost;
}

export interface SandboxedRun {
  run_id: string;
  agent_id: string;
  command: string[];
  env: Record<string, string>;
  stdin: string;
  network: AgentNetwork;
  /** What the agent reads: its bundle, the runtime, the docs, the package's node_modules. */
  readOnly: string[];
}

export interface SandboxedRunnerOptions {
  home: string;
  varDir: string;
  limits: AgentLimits;
  /** Where the host's agent uid claims are (tests keep theirs apart); the host's by default. */
  agentUidsDir?: string;
  /** The system-call filter's BPF program (./syscall-filter.ts); none: runs go without one. */
  syscallFilter?: string;
  /** What makes each run's sandbox: bwrap (by default), or util-linux's unshare as root (agent_isolation unshare). */
  tool?: 'bubblewrap' | 'unshare';
}

/** The host's other node homes: the installed node's (it holds the named ones), and every home its uid claims name. */
function otherHomes(home: string, agentUidsDir: string | undefined): string[] {
  const own = resolve(home);
  return [INSTALL_PATH, ...claimedHomes(agentUidsDir)].map((path) => resolve(path)).filter((path) => path !== own && path !== '/');
}

export function createSandboxedRunner(options: SandboxedRunnerOptions): SandboxedRunner {
  const { limits } = options;
  const privileged = isPrivileged();
  const tool = options.tool ?? 'bubblewrap';
  if (tool === 'unshare' && !privileged) throw new Error('the unshare sandbox runs as root only');
  // unshare loads no filter (./sandbox.ts unshareArgv): none is opened for it.
  const syscallFilter = tool === 'unshare' ? undefined : options.syscallFilter;
  const homeKey = createHash('sha256').update(resolve(options.home)).digest('hex').slice(0, 16);
  const cgroups = cgroupHost(homeKey);
  const stateDir = privileged ? prepareStateDir(options.varDir) : join(options.varDir, 'state');

  async function run(
    request: SandboxedRun,
    signal?: AbortSignal,
    onOutput?: AgentProcessSpec['onOutput'],
    kit?: AgentProcessSpec['kit'],
  ): Promise<{ outcome: AgentOutcome; artifacts?: HeldArtifacts }> {
    const identity = privileged ? agentIdentity(options.home, request.agent_id, options.agentUidsDir) : undefined;
    // In the sandbox the agent's state is where it would be on the host; the node's home around it is an empty tmpfs.
    const stateTarget = join(options.varDir, 'state', request.agent_id);
    let image: StateImage | undefined;
    let cgroup: RunCgroup | undefined;
    let artifacts: ArtifactSpace | undefined;
    try {
      if (identity !== undefined) image = ensureStateImage(stateDir, request.agent_id, identity, limits.stateBytes);
      else mkdirSync(stateTarget, { recursive: true, mode: 0o700 });
      artifacts = await makeArtifactSpace(options.varDir, request.run_id, limits.artifactsBytes, identity);
      if (cgroups.version !== null)
        cgroup = cgroups.create(request.run_id, {
          memoryBytes: limits.memoryBytes,
          tasks: limits.processes,
          cpuPercent: limits.cpuPercent,
        });
    } catch (error) {
      artifacts?.release();
      return {
        outcome: {
          status: 'failed',
          error: 'spawn',
          message: `the sandbox of the run could not be set up: ${(error as Error).message}`,
          stderrTail: '',
        },
      };
    }
    const runDir = `/tmp/swarm-run-${request.run_id}`;
    const sandbox = (tool === 'unshare' ? unshareArgv : bubblewrapArgv)({
      identity,
      // Every other node home of this host too (their etc/, their bundles): those its claims name, and the installed one.
      hidden: [options.home, options.varDir, ...otherHomes(options.home, options.agentUidsDir)],
      readOnly: request.readOnly,
      state: { source: image?.mountPoint ?? stateTarget, target: stateTarget },
      artifacts: artifacts.dir,
      tmpBytes: limits.tmpBytes,
      network: request.network,
      ...(syscallFilter === undefined || identity === undefined ? {} : { syscallFilterFd: SYSCALL_FILTER_FD }),
    });
    const procs = cgroup?.procsFiles ?? [];
    const wrapper = [
      // As root: a copy of the mount namespace that holds the run's artifacts tmpfs (./artifact-space.ts).
      ...(artifacts.namespace === undefined ? [] : ['nsenter', `--mount=${artifacts.namespace}`, '--']),
      ...(privileged ? ['unshare', '--mount', '--propagation', 'private'] : []),
      '/bin/sh',
      '-c',
      PRELUDE,
      'swarm-sandbox',
      String(procs.length),
      ...procs,
      image?.image ?? '',
      image?.lock ?? '',
      image?.mountPoint ?? '',
      identity === undefined ? '' : `${identity.uid}:${identity.gid}`,
      syscallFilter ?? '',
      ...sandbox,
    ];
    const outcome = await runAgentProcess({
      command: request.command,
      runDir,
      stdin: request.stdin,
      limits,
      env: { ...request.env, HOME: runDir, TMPDIR: runDir, SWARM_STATE_DIR: stateTarget, SWARM_ARTIFACTS_DIR: artifacts.dir },
      wrapper,
      ...(identity === undefined
        ? { ownPidNamespace: ownPidNamespaceArgv(syscallFilter === undefined ? undefined : SYSCALL_FILTER_FD) }
        : { asAgent: asAgentUser(identity) }),
      sandboxed: true,
      ...(cgroup === undefined ? {} : { cgroup }),
      capped: [
        { path: '/tmp', what: 'its /tmp (the run directory)', bytes: limits.tmpBytes },
        { path: '/dev/shm', what: 'its /dev/shm', bytes: limits.tmpBytes },
        ...(image === undefined ? [] : [{ path: stateTarget, what: 'its state directory', bytes: limits.stateBytes, margin: true }]),
        ...(artifacts.capped ? [{ path: artifacts.dir, what: 'its artifacts directory', bytes: limits.artifactsBytes }] : []),
      ],
      // Without a pids cgroup, RLIMIT_NPROC of the agent's own uid is what counts its processes.
      nproc: cgroup === undefined && identity !== undefined,
      ...(signal === undefined ? {} : { signal }),
      ...(onOutput === undefined ? {} : { onOutput }),
      ...(kit === undefined ? {} : { kit }),
    });
    const space = artifacts;
    return { outcome, artifacts: { source: directoryArtifacts(space.readDir, MAX_ARTIFACT_BYTES), release: () => space.release() } };
  }

  return {
    cgroups,
    run,
    async removeLeftovers(inFlight) {
      const spaces = removeLeftoverRunDirs(join(options.varDir, 'artifacts'), inFlight);
      return spaces + (cgroups.version === null ? 0 : await cgroups.leftovers(inFlight));
    },
  };
}

// The launcher of an agent run (./agent-process.ts), a POSIX sh script run under `prlimit` (util-linux), inside the
// run's wrapper where there is one (./run-sandboxed.ts): it runs the agent and, once it ended, tells on fd 3 how much
// room was left on the filesystems the run writes to, so a run that filled one fails `disk_quota` rather than `exit`,
// and on fd 4 the result file the agent wrote, which only the launcher can see in a sandbox. The agent must not reach
// it (docs/operations.md "Agent isolation"): a process may read and write the memory of another of its uid, so where
// there is an agent's uid the launcher stays root and takes that uid only for what is the agent's (its run directory,
// its process, the read of its result file), and no process of the agent may read or write its memory, open its
// descriptors or signal it; unprivileged, where the agent's user is the launcher's, the agent runs in a pid namespace
// of its own, in which the launcher has no pid.
import { RESULT_PRESENT_MARK } from './agent-result.js';
import type { CappedFilesystem } from './run-failures.js';

/** The launcher's own failures (no directory, a limit refused) exit with this and a marked line on stderr. */
export const LAUNCH_FAILED = 125;
export const LAUNCH_MARK = 'swarm-node-launcher:';

// $1 the run directory, $2 the most bytes of a result file reported, $3 how many paths follow whose room is reported,
// then those paths, then the uid switch and the agent's own pid namespace (words, '' for none), then the command.
// The run directory is made and entered, and the agent run, by ENTER under both. With no room to report (an
// unsandboxed run, its directory on the host, where the node reads the result file itself), the launcher becomes the
// agent (exec). Otherwise it waits for the agent and outlives a SIGTERM meant for it (a handler, which the agent does
// not inherit as `trap ''` would pass on ignoring it), so it still reports after the agent stopped; it reads the
// result file under the uid switch, as the agent, so a link there reaches only what the agent may read. Neither the
// agent nor the reader gets fd 3; the agent gets no fd 4 either (nor fd 5, the system-call filter its own pid
// namespace's bubblewrap reads and closes). The result file must be a regular file (-f): a FIFO there would hold the
// reader.
const ENTER = `mkdir -m 700 "$1" || { echo "${LAUNCH_MARK} cannot create the run directory" >&2; exit ${LAUNCH_FAILED}; }
cd "$1" || { echo "${LAUNCH_MARK} cannot enter the run directory" >&2; exit ${LAUNCH_FAILED}; }
shift
exec "$@"`;
const READ_RESULT = `if [ -f "$SWARM_RESULT_FILE" ]; then printf ${RESULT_PRESENT_MARK}; head -c "$1" "$SWARM_RESULT_FILE" 2>/dev/null; fi`;
const LAUNCHER = `umask 077
set -f
trap : TERM
dir=$1; most=$2; count=$3; shift 3
room=
while [ "$count" -gt 0 ]; do room="$room $1"; shift; count=$((count - 1)); done
as=$1; alone=$2; shift 2
enter='${ENTER}'
[ -n "$room" ] || exec $as /bin/sh -c "$enter" swarm-agent "$dir" "$@" 3>&- 4>&-
$alone $as /bin/sh -c "$enter" swarm-agent "$dir" "$@" 3>&- 4>&-
status=$?
exec 5<&-
stat -f -c '%a %f %b %d %S %n' $room >&3 2>/dev/null
exec 3>&-
$as /bin/sh -c '${READ_RESULT}' swarm-result "$most" >&4
exit $status`;

/** What the launcher is given: where it runs, its limits, what it reports, how it runs the agent. */
export interface LaunchSpec {
  /** The program and its arguments: an argument array, never a shell string. */
  command: readonly string[];
  /** Made for the run by the agent, under the uid switch (0700, its own). */
  runDir: string;
  limits: { memoryBytes: number; fileBytes: number; processes: number; outputBytes: number };
  /** What the launcher runs in (cgroup, state mount, sandbox), ending where the launcher's argv starts. */
  wrapper?: readonly string[];
  /** Filesystems whose room left it reports (none: it becomes the agent). */
  capped?: readonly CappedFilesystem[];
  /**
   * The uid switch (an argv ending where the command starts) the launcher runs the agent and the read of its result
   * file under, staying root itself: setpriv in a sandbox, nsenter under systemd (./agent-exec.ts).
   */
  asAgent?: readonly string[];
  /** What the agent alone runs in, an argv ending where the command starts: a pid namespace of its own, the launcher outside it. */
  ownPidNamespace?: readonly string[];
  /**
   * RLIMIT_NPROC: only where nothing better counts the run's processes, and the run has a uid of its own (it counts
   * that uid's processes; the launcher, root, is not held to it).
   */
  nproc?: boolean;
}

/** The wrapper, prlimit and the launcher with its arguments (LAUNCHER above). */
export function launcherArgv(spec: LaunchSpec): string[] {
  const { limits } = spec;
  const capped = spec.capped ?? [];
  return [
    ...(spec.wrapper ?? []),
    'prlimit',
    `--data=${limits.memoryBytes}`,
    `--fsize=${limits.fileBytes}`,
    '--nofile=256',
    '--core=0',
    ...(spec.nproc === true ? [`--nproc=${limits.processes}`] : []),
    '--',
    '/bin/sh',
    '-c',
    LAUNCHER,
    'swarm-agent',
    spec.runDir,
    String(limits.outputBytes + 1),
    String(capped.length),
    ...capped.map((fs) => fs.path),
    launcherWords(spec.asAgent),
    launcherWords(spec.ownPidNamespace),
    ...spec.command,
  ];
}

/** An argv the launcher splits on spaces (unquoted, globbing off): words of ours, none with a space or a quote. */
function launcherWords(argv: readonly string[] | undefined): string {
  if (argv === undefined) return '';
  if (argv.some((word) => word === '' || /[\s'"\\$`]/.test(word))) throw new Error(`not words the launcher can split: ${argv.join(' ')}`);
  return argv.join(' ');
}

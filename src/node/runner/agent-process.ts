// One agent run as a process on this host (docs/sections/agent-upload.md "The runtime contract"): JSON on stdin,
// one JSON document on stdout, under the run's own user (./isolation.ts), in a private directory, with a clean
// environment and time, memory, process, file-size and output limits. Whatever happens, the run's processes are
// gone and its directory removed when this resolves.
//
// The chain is util-linux and POSIX sh only, present on every Linux host: `setpriv` switches to the run's uid and
// gid AND clears the inheritable and ambient capability sets (a plain spawn with a uid would hand the daemon's
// ambient CAP_SETUID to the agent, which could then become any user, the daemon's included); `prlimit` sets the
// limits; `sh` makes the 0700 run directory as the run's user (the daemon needs no CAP_CHOWN) and execs the agent.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { RunIdentity } from './isolation.js';

export interface AgentLimits {
  /** Wall clock, from the start of the process; then SIGTERM, and SIGKILL a grace later. */
  timeoutMs: number;
  /** RLIMIT_DATA: the heap and other private writable memory. */
  memoryBytes: number;
  /** What stdout may hold; more fails the run (the service stores and returns the output). */
  outputBytes: number;
  /** RLIMIT_FSIZE: the largest file the run may write. */
  fileBytes: number;
  /** RLIMIT_NPROC, counted per user: only meaningful with a uid of the run's own (a fork bomb stops there). */
  processes: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  timeoutMs: 30_000,
  memoryBytes: 512 * 1024 * 1024,
  outputBytes: 1024 * 1024,
  fileBytes: 64 * 1024 * 1024,
  processes: 64,
};

/** After SIGTERM at the deadline, what a run gets to stop by itself before SIGKILL. */
export const KILL_GRACE_MS = 2_000;
const STDERR_TAIL_BYTES = 16 * 1024;
/** The launcher's own failures (no directory, a limit refused) exit with this and a marked line on stderr. */
const LAUNCH_FAILED = 125;
const LAUNCH_MARK = 'swarm-node-launcher:';

// $1 run directory, $2 the agent's state directory ('' for none), then the command. umask 007: files stay within the
// run's group (the agent's state directory, 2770, is shared by that agent's runs, which have its gid); the run
// directory itself is 0700, so no other run can enter it.
const LAUNCHER = `umask 007
dir=$1; state=$2; shift 2
[ -z "$state" ] || [ -d "$state" ] || mkdir -m 2770 "$state" 2>/dev/null || true
mkdir -m 700 "$dir" || { echo "${LAUNCH_MARK} cannot create the run directory" >&2; exit ${LAUNCH_FAILED}; }
cd "$dir" || { echo "${LAUNCH_MARK} cannot enter the run directory" >&2; exit ${LAUNCH_FAILED}; }
exec "$@"`;

export type AgentFailure = 'timeout' | 'exit' | 'bad_output' | 'spawn' | 'aborted';

export type AgentOutcome =
  | { status: 'succeeded'; output: unknown; stderrTail: string }
  | { status: 'failed'; error: AgentFailure; message: string; stderrTail: string };

export interface AgentProcessSpec {
  /** The program and its arguments: an argument array, never a shell string. */
  command: readonly string[];
  /** Created for the run (must not exist yet) and removed after it. */
  runDir: string;
  /** Kept between runs of the agent (made 2770 for the agent's group when missing); undefined: no state. */
  stateDir?: string;
  /** Written to stdin, then stdin is closed. */
  stdin: string;
  /** The run's own user; undefined: the daemon's user (no privilege to switch). */
  identity: RunIdentity | undefined;
  limits: AgentLimits;
  /** The agent's whole environment: nothing of the daemon's is inherited. */
  env: Record<string, string>;
  /** Aborted when the node stops: the run ends as `aborted`. */
  signal?: AbortSignal;
}

export async function runAgentProcess(spec: AgentProcessSpec): Promise<AgentOutcome> {
  const { limits } = spec;
  const argv = [
    ...(spec.identity === undefined ? [] : asRunUser(spec.identity)),
    'prlimit',
    `--data=${limits.memoryBytes}`,
    `--fsize=${limits.fileBytes}`,
    '--nofile=256',
    '--core=0',
    ...(spec.identity === undefined ? [] : [`--nproc=${limits.processes}`]),
    '--',
    '/bin/sh',
    '-c',
    LAUNCHER,
    'swarm-agent',
    spec.runDir,
    spec.stateDir ?? '',
    ...spec.command,
  ];
  let child: ChildProcess;
  try {
    // detached: a process group of its own, so the same-user fallback can signal the whole run.
    child = spawn(argv[0]!, argv.slice(1), { env: spec.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  } catch (error) {
    return { status: 'failed', error: 'spawn', message: `the agent could not be started: ${(error as Error).message}`, stderrTail: '' };
  }
  try {
    return await supervise(child, spec);
  } finally {
    await cleanUp(spec);
  }
}

function asRunUser(identity: RunIdentity): string[] {
  return [
    'setpriv',
    `--reuid=${identity.uid}`,
    `--regid=${identity.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--ambient-caps=-all',
    '--no-new-privs',
    '--',
  ];
}

function supervise(child: ChildProcess, spec: AgentProcessSpec): Promise<AgentOutcome> {
  return new Promise((resolve) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrTail = Buffer.alloc(0);
    let ended: { error: AgentFailure; message: string } | undefined;
    const timers: NodeJS.Timeout[] = [];
    // A signal to a uid is a process of its own (kill -1 as that uid); the outcome waits for them, so none can land
    // after the uid is given back to the pool, on the next run that takes it.
    const signalling: Promise<void>[] = [];
    const signal = (name: 'SIGTERM' | 'SIGKILL'): void => {
      signalling.push(signalRun(child, spec.identity, name));
    };

    const stop = (error: AgentFailure, message: string): void => {
      if (ended !== undefined) return;
      ended = { error, message };
      signal('SIGTERM');
      timers.push(setTimeout(() => signal('SIGKILL'), error === 'bad_output' ? 0 : KILL_GRACE_MS));
    };
    timers.push(setTimeout(() => stop('timeout', `the agent did not answer within ${formatMs(spec.limits.timeoutMs)}`), spec.limits.timeoutMs));
    const onAbort = (): void => stop('aborted', 'the run was stopped: the node is shutting down');
    if (spec.signal?.aborted) onAbort();
    else spec.signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout!.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > spec.limits.outputBytes) stop('bad_output', `the agent wrote more than ${spec.limits.outputBytes} bytes on stdout`);
      else stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      stderrTail = Buffer.concat([stderrTail, chunk]);
      if (stderrTail.length > STDERR_TAIL_BYTES) stderrTail = stderrTail.subarray(stderrTail.length - STDERR_TAIL_BYTES);
    });
    // An agent that exits without reading its input closes the pipe: that is its business, not an error of ours.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(spec.stdin);

    child.on('error', (error) => {
      if (ended === undefined) ended = { error: 'spawn', message: `the agent could not be started: ${error.message}` };
    });
    const outcomeOf = (code: number | null, signal: NodeJS.Signals | null): AgentOutcome => {
      const tail = stderrTail.toString('utf8');
      if (ended !== undefined) return { status: 'failed', ...ended, stderrTail: tail };
      if (code === LAUNCH_FAILED && tail.includes(LAUNCH_MARK)) {
        return { status: 'failed', error: 'spawn', message: 'the agent could not be started: its run directory could not be made', stderrTail: tail };
      }
      if (code !== 0) {
        const how = signal !== null ? `was killed by ${signal}` : code === 127 || code === 126 ? `could not be started (exit ${code})` : `exited with code ${code}`;
        return { status: 'failed', error: code === 127 || code === 126 ? 'spawn' : 'exit', message: `the agent ${how}`, stderrTail: tail };
      }
      const text = Buffer.concat(stdout).toString('utf8').trim();
      try {
        if (text === '') throw new Error('empty');
        return { status: 'succeeded', output: JSON.parse(text) as unknown, stderrTail: tail };
      } catch {
        return { status: 'failed', error: 'bad_output', message: 'the agent did not answer with one JSON document on stdout', stderrTail: tail };
      }
    };
    child.on('close', (code, killedBy) => {
      for (const timer of timers) clearTimeout(timer);
      spec.signal?.removeEventListener('abort', onAbort);
      const outcome = outcomeOf(code, killedBy);
      void Promise.all(signalling).then(() => resolve(outcome));
    });
  });
}

/**
 * Signals every process of the run. With a uid of its own, that is every process of that uid (background children
 * and double forks included), sent by a process of the same uid: the daemon holds no CAP_KILL. Otherwise the
 * process group.
 */
function signalRun(child: ChildProcess, identity: RunIdentity | undefined, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  if (identity !== undefined) return asUser(identity, `kill -s ${signal.slice(3)} -- -1 2>/dev/null; exit 0`).catch(() => undefined);
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // Gone already.
  }
  return Promise.resolve();
}

/** Kills what is left of the run and removes its directory, as the run's own user when it has one. */
async function cleanUp(spec: AgentProcessSpec): Promise<void> {
  if (spec.identity === undefined) {
    rmSync(spec.runDir, { recursive: true, force: true });
    return;
  }
  await asUser(spec.identity, 'kill -s KILL -- -1 2>/dev/null; rm -rf -- "$1"', spec.runDir);
}

/** Runs a tiny sh script as `identity` (its kill -1 spares the shell itself, POSIX kill(2)). */
export function asUser(identity: RunIdentity, script: string, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(asRunUser(identity)[0]!, [...asRunUser(identity).slice(1), '/bin/sh', '-c', script, 'swarm-cleanup', ...args], {
      stdio: 'ignore',
      env: { PATH: '/usr/bin:/bin' },
    });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

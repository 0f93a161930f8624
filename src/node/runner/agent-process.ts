// One agent run as a process on this host (docs/sections/agent-upload.md "The runtime contract"): JSON on stdin,
// one JSON document on stdout or in its result file (./agent-result.ts), in a private directory, with a clean
// environment and time, memory, task, file-size, disk and output limits. Its stdout and stderr go to `onOutput` as
// they come (the run's log, docs/api.md "Run logs"). Whatever happens, the run's processes are gone when this resolves.
//
// The process is the launcher (./launcher.ts): inside the run's sandbox where there is one, it runs the agent and
// reports the room left on the run's filesystems and its result file, out of the agent's reach.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { rmSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import type { Duplex, Readable } from 'node:stream';
import { DEFAULT_RUN_SECONDS } from '../../contract/job-limits.js';
import { MAX_ARTIFACT_BYTES_PER_RUN } from '../../contract/jobs.js';
import type { LimitsReached } from './cgroups.js';
import { answerOf, fileFromReport, readResultFile, resultFileIn } from './agent-result.js';
import { LAUNCH_FAILED, LAUNCH_MARK, launcherArgv, type LaunchSpec } from './launcher.js';
import { startTimeLimit } from './time-limit.js';
import { limitFailure, parseRoomLeft, type AgentFailure, type CappedFilesystem } from './run-failures.js';
import { sandboxProcesses } from './sandbox-processes.js';
import { serveKitChannel, type KitChannel, type KitEvent, type KitRunContext } from './kit-channel.js';
import { KIT_FD, KIT_PROTOCOL_VERSION } from '../../contract/kit-protocol.js';

export type { AgentFailure };

/** Where the events a run emits on its kit channel go as they come. */
export type EventSink = (event: KitEvent) => void;

export interface AgentLimits {
  /** Wall clock, from the start of the process; then SIGTERM, and SIGKILL a grace later. */
  timeoutMs: number;
  /** The whole run's memory (its cgroup; tmpfs pages included); RLIMIT_DATA of each process too. */
  memoryBytes: number;
  /** The result at most (stdout's or the result file's): more fails the run (the service stores and returns it). */
  outputBytes: number;
  /** RLIMIT_FSIZE: the largest file the run may write. */
  fileBytes: number;
  /** The whole run's processes and threads (its cgroup); RLIMIT_NPROC where that is all there is. */
  processes: number;
  /** CPU time per wall-clock time, in percent of one CPU (its cgroup). */
  cpuPercent: number;
  /** The size of each of the run's /tmp (its directory) and /dev/shm, in memory. */
  tmpBytes: number;
  /** The size of what the agent keeps between runs (its state image). */
  stateBytes: number;
  /** The size of its artifacts directory, where it is a tmpfs: the most a run's artifacts take (contract/jobs.ts). */
  artifactsBytes: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = {
  timeoutMs: DEFAULT_RUN_SECONDS * 1000,
  memoryBytes: 512 * 1024 * 1024,
  outputBytes: 1024 * 1024,
  fileBytes: 64 * 1024 * 1024,
  processes: 64,
  cpuPercent: 100,
  tmpBytes: 64 * 1024 * 1024,
  stateBytes: 256 * 1024 * 1024,
  artifactsBytes: MAX_ARTIFACT_BYTES_PER_RUN,
};

/** The abort reason of a run its user cancelled (docs/api.md "Run logs": the service's answer to the log says so). */
export const RUN_CANCELLED = 'cancelled';

/** After SIGTERM at the deadline, what a run gets to stop by itself before SIGKILL. */
export const KILL_GRACE_MS = 2_000;
const STDERR_TAIL_BYTES = 16 * 1024;
export type AgentOutcome =
  | { status: 'succeeded'; output: unknown; stderrTail: string }
  | { status: 'failed'; error: AgentFailure; message: string; stderrTail: string };

export interface AgentProcessSpec extends LaunchSpec {
  /** Created for the run (must not exist yet); removed after it when `removeRunDir`. */
  runDir: string;
  /** Written to stdin, then stdin is closed. */
  stdin: string;
  limits: AgentLimits;
  /** The agent's whole environment: nothing of the daemon's is inherited. */
  env: Record<string, string>;
  /** Aborted when the node stops: the run ends as `aborted`. */
  signal?: AbortSignal;
  /** The run's own pid namespace (bubblewrap, unshare): signals go to the processes inside it, SIGKILL to the whole sandbox. */
  sandboxed?: boolean;
  /** The run's cgroup: what reached a limit; `remove` ends every process of it and the group, after the run. */
  cgroup?: { reached(): LimitsReached; remove?(): Promise<void> };
  /** Filesystems of the run's own whose exhaustion fails it `disk_quota`, as the launcher sees them. */
  capped?: CappedFilesystem[];
  /** The run directory is on the host (no sandbox): removed after the run. */
  removeRunDir?: boolean;
  /** The agent's stdout and stderr, each chunk as it comes (the run's log). */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
  /** The run's kit channel (./kit-channel.ts): descriptor KIT_FD of the agent; the events it emits to `onEvent`. */
  kit?: { context: KitRunContext; onEvent: EventSink };
}

export async function runAgentProcess(spec: AgentProcessSpec): Promise<AgentOutcome> {
  let child: ChildProcess;
  try {
    const argv = launcherArgv(spec);
    // detached: a process group of its own, so an unsandboxed run can be signalled whole.
    const env = {
      ...spec.env,
      SWARM_RESULT_FILE: resultFileIn(spec.runDir),
      ...(spec.kit === undefined ? {} : { SWARM_KIT_FD: String(KIT_FD), SWARM_KIT_PROTOCOL: String(KIT_PROTOCOL_VERSION) }),
    };
    // The kit's descriptor past the system-call filter's (5), which the sandbox's prelude opens itself: a socket pair.
    const stdio: StdioOptions = ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', ...(spec.kit === undefined ? [] : (['ignore', 'pipe'] as const))];
    child = spawn(argv[0]!, argv.slice(1), { env, stdio, detached: true });
  } catch (error) {
    await spec.cgroup?.remove?.().catch(() => undefined);
    return { status: 'failed', error: 'spawn', message: `the agent could not be started: ${(error as Error).message}`, stderrTail: '' };
  }
  try {
    return await supervise(child, spec);
  } finally {
    await spec.cgroup?.remove?.().catch(() => undefined);
    if (spec.removeRunDir === true) rmSync(spec.runDir, { recursive: true, force: true });
  }
}

function supervise(child: ChildProcess, spec: AgentProcessSpec): Promise<AgentOutcome> {
  return new Promise((resolve) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const resultReport: Buffer[] = [];
    let resultReportBytes = 0;
    let stderrTail = Buffer.alloc(0);
    let room = '';
    let ended: { error: AgentFailure; message: string } | undefined;
    const timers: NodeJS.Timeout[] = [];
    const sandboxed = spec.sandboxed === true;

    const stop = (error: AgentFailure, message: string): void => {
      if (ended !== undefined) return;
      ended = { error, message };
      signalRun(child, sandboxed, 'SIGTERM');
      timers.push(setTimeout(() => signalRun(child, sandboxed, 'SIGKILL'), KILL_GRACE_MS));
    };
    // Time this process spent frozen (SIGSTOP) is not the agent's: an answer that waited meanwhile is read first.
    const limit = startTimeLimit(spec.limits.timeoutMs, () =>
      stop('timeout', `the agent did not answer within ${formatMs(spec.limits.timeoutMs)}`),
    );
    const onAbort = (): void =>
      spec.signal?.reason === RUN_CANCELLED
        ? stop('cancelled', 'the run was cancelled by its user')
        : stop('aborted', 'the run was stopped: the node is shutting down');
    if (spec.signal?.aborted) onAbort();
    else spec.signal?.addEventListener('abort', onAbort, { once: true });

    // stdout is the result only up to its cap (the agent may answer in its result file instead): past it, the log's.
    child.stdout!.on('data', (chunk: Buffer) => {
      spec.onOutput?.('stdout', chunk);
      if (stdoutBytes <= spec.limits.outputBytes) stdout.push(chunk.subarray(0, spec.limits.outputBytes + 1 - stdoutBytes));
      stdoutBytes += chunk.length;
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      spec.onOutput?.('stderr', chunk);
      stderrTail = Buffer.concat([stderrTail, chunk]);
      if (stderrTail.length > STDERR_TAIL_BYTES) stderrTail = stderrTail.subarray(stderrTail.length - STDERR_TAIL_BYTES);
    });
    const report = child.stdio[3] as Readable;
    report.on('data', (chunk: Buffer) => {
      if (room.length < 4096) room += chunk.toString('utf8');
    });
    report.on('error', () => undefined);
    const result = child.stdio[4] as Readable;
    result.on('data', (chunk: Buffer) => {
      if (resultReportBytes <= spec.limits.outputBytes + 1) resultReport.push(chunk);
      resultReportBytes += chunk.length;
    });
    result.on('error', () => undefined);
    const kit: KitChannel | undefined =
      spec.kit === undefined
        ? undefined
        : serveKitChannel((child.stdio as unknown[])[KIT_FD] as Duplex, spec.kit.context, spec.kit.onEvent);
    // An agent that exits without reading its input closes the pipe: that is its business, not an error of ours.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(spec.stdin);

    child.on('error', (error) => {
      if (ended === undefined) ended = { error: 'spawn', message: `the agent could not be started: ${error.message}` };
    });
    const outcomeOf = (code: number | null, signal: NodeJS.Signals | null): AgentOutcome => {
      const tail = stderrTail.toString('utf8');
      // A limit the run reached is why it failed, even when it then ran out of time; the node stopping is not its doing.
      if (ended?.error === 'aborted' || ended?.error === 'cancelled') return { status: 'failed', ...ended, stderrTail: tail };
      const limit = limitFailure(spec.cgroup?.reached(), parseRoomLeft(room), spec.capped ?? [], spec.limits);
      if (limit !== undefined) return { status: 'failed', ...limit, stderrTail: tail };
      if (ended !== undefined) return { status: 'failed', ...ended, stderrTail: tail };
      // The agent's own word that it failed stands however it then exited; its result, only with an exit of 0.
      const verdict = kit?.verdict();
      if (verdict?.kind === 'failure') return { status: 'failed', error: verdict.error, message: verdict.message, stderrTail: '' };
      if (code === LAUNCH_FAILED && tail.includes(LAUNCH_MARK)) {
        return {
          status: 'failed',
          error: 'spawn',
          message: 'the agent could not be started: its run directory could not be made',
          stderrTail: tail,
        };
      }
      // The wrapper's own failures: the prelude's (125), bubblewrap's or unshare's (1, "bwrap: …" on stderr).
      if (spec.wrapper !== undefined && (code === LAUNCH_FAILED || (code === 1 && /^(bwrap|unshare|setpriv): /m.test(tail)))) {
        return { status: 'failed', error: 'spawn', message: 'the sandbox of the run could not be set up', stderrTail: tail };
      }
      if (code !== 0) {
        // The agent's death by a signal reaches us as the launcher's exit, 128 + the signal's number.
        const bySignal = signal ?? (code !== null && code > 128 && code < 160 ? signalName(code - 128) : null);
        const how =
          bySignal !== null
            ? `was killed by ${bySignal}`
            : code === 127 || code === 126
              ? `could not be started (exit ${code})`
              : `exited with code ${code}`;
        return { status: 'failed', error: code === 127 || code === 126 ? 'spawn' : 'exit', message: `the agent ${how}`, stderrTail: tail };
      }
      if (verdict?.kind === 'result') return { status: 'succeeded', output: verdict.output, stderrTail: tail };
      const maxBytes = spec.limits.outputBytes;
      // The launcher reports the file when it outlived the agent; else the run directory is here to read.
      const file =
        (spec.capped ?? []).length > 0 ? fileFromReport(Buffer.concat(resultReport)) : readResultFile(resultFileIn(spec.runDir), maxBytes);
      const answer = answerOf({ file, stdout: Buffer.concat(stdout), stdoutOverflowed: stdoutBytes > maxBytes, maxBytes });
      if (answer.kind === 'output') return { status: 'succeeded', output: answer.output, stderrTail: tail };
      return { status: 'failed', error: 'bad_output', message: answer.message, stderrTail: tail };
    };
    child.on('close', (code, killedBy) => {
      for (const timer of timers) clearTimeout(timer);
      limit.stop();
      spec.signal?.removeEventListener('abort', onAbort);
      // The channel's last calls are answered before the outcome is made of them.
      void (kit?.done ?? Promise.resolve()).then(() => resolve(outcomeOf(code, killedBy)));
    });
  });
}

/**
 * Signals the run. In a sandbox: SIGTERM to the processes inside it (the agent and what it started, double forks
 * included: they stay in its pid namespace), SIGKILL to bubblewrap itself, whose death ends the namespace and every
 * process in it. Otherwise the process group.
 */
function signalRun(child: ChildProcess, sandboxed: boolean, signal: 'SIGTERM' | 'SIGKILL'): void {
  if (child.pid === undefined) return;
  const targets = !sandboxed ? [-child.pid] : signal === 'SIGKILL' ? [child.pid] : sandboxProcesses(child.pid);
  for (const pid of targets) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone already.
    }
  }
}

function signalName(number: number): string {
  const name = Object.entries(osConstants.signals).find(([, value]) => value === number)?.[0];
  return name ?? `signal ${number}`;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

// Agent runs as systemd services (docs/operations.md "Agent isolation"): on an installed node systemd listens on
// the agent socket (svc-swarm-node-agent.socket, Accept=yes) and starts one svc-swarm-node-agent@.service per
// connection, as the agent user, in a sandbox of its own: a private /tmp for the run's directory, the node's etc/
// and var/ out of sight, no capabilities, cgroup limits. The daemon keeps none of the privileges a uid switch
// needs, so its own unit stays as locked down as before.
//
// The exchange on the connection: the daemon sends one JSON line (AgentExecRequest) and keeps its side open; the
// service (`swarm-node agent-exec`, stdin and stdout on the connection) runs the agent, sends what it writes as it
// comes (a JSON line {"output": {stream, data}} per chunk, the bytes in base64: the run's log) and answers one JSON
// line (AgentOutcome) last. The daemon closing the connection early stops the agent: the node is stopping, or the
// run was cancelled.
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { runAgentProcess, RUN_CANCELLED, type AgentLimits, type AgentOutcome, type AgentProcessSpec } from './agent-process.js';
import { ownCgroupCounters } from './cgroup-probe.js';

export interface AgentExecRequest {
  run_id: string;
  agent_id: string;
  command: string[];
  /** The agent's environment but for its directories (HOME, TMPDIR, SWARM_STATE_DIR), which the service decides. */
  env: Record<string, string>;
  stdin: string;
  limits: AgentLimits;
}

/** A request line is the agent's input (at most 1 MiB as the service stores it) and a little more. */
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;
const RUN_ID = /^[A-Za-z0-9-]{1,64}$/;
const AGENT_ID = /^agent_[a-z0-9_]{1,64}$/;

/** A line of the service's answer that carries output rather than the outcome. */
interface OutputLine {
  output: { stream: 'stdout' | 'stderr'; data: string };
}

/** The daemon's side: the agent's outcome, however the connection ends; its output to `onOutput` as it comes. */
export function execViaSocket(socketPath: string, request: AgentExecRequest, signal?: AbortSignal, onOutput?: AgentProcessSpec['onOutput']): Promise<AgentOutcome> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let buffered: Buffer = Buffer.alloc(0);
    let outcomeLine: string | undefined;
    let settled = false;
    const finish = (outcome: AgentOutcome): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const onAbort = (): void =>
      finish(
        signal?.reason === RUN_CANCELLED
          ? { status: 'failed', error: 'cancelled', message: 'the run was cancelled by its user', stderrTail: '' }
          : { status: 'failed', error: 'aborted', message: 'the run was stopped: the node is shutting down', stderrTail: '' },
      );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (let newline = buffered.indexOf(0x0a); newline >= 0; newline = buffered.indexOf(0x0a)) {
        const line = buffered.subarray(0, newline).toString('utf8');
        buffered = buffered.subarray(newline + 1);
        const output = outputOf(line);
        if (output !== undefined) onOutput?.(output.stream, Buffer.from(output.data, 'base64'));
        else if (line.trim() !== '') outcomeLine = line;
      }
    });
    socket.on('error', (error: NodeJS.ErrnoException) =>
      finish({
        status: 'failed',
        error: 'spawn',
        message: `the agent service could not be reached at ${socketPath} (${error.code ?? error.message}): is svc-swarm-node-agent.socket running?`,
        stderrTail: '',
      }),
    );
    socket.on('close', () => {
      const text = (outcomeLine ?? buffered.toString('utf8')).trim();
      try {
        finish(JSON.parse(text) as AgentOutcome);
      } catch {
        finish({ status: 'failed', error: 'spawn', message: 'the agent service ended without an outcome (see journalctl -u "svc-swarm-node-agent@*")', stderrTail: '' });
      }
    });
  });
}

/** The service's side (`swarm-node agent-exec`): one request in, the agent run in this sandbox, one outcome out. */
export async function serveAgentExec(input: Readable, output: Writable, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const stopped = new AbortController();
  // The daemon gone (it stopped, or cancelled the run) while the agent still writes: nobody to tell, not a crash.
  output.on('error', () => stopped.abort());
  let request: AgentExecRequest;
  try {
    request = parseRequest(await readLine(input));
  } catch (error) {
    return answer({ status: 'failed', error: 'spawn', message: `agent-exec: ${(error as Error).message}`, stderrTail: '' });
  }
  // The daemon closes its side only to stop the run.
  input.on('end', () => stopped.abort());
  input.on('close', () => stopped.abort());
  input.resume();
  const runDir = join(tmpdir(), `swarm-run-${request.run_id}`);
  const stateDir = env.STATE_DIRECTORY === undefined ? undefined : join(env.STATE_DIRECTORY.split(':')[0]!, request.agent_id);
  if (stateDir !== undefined) mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  // The unit's cgroup is this run's alone: its counters say whether the run reached MemoryMax= or TasksMax=.
  const counters = ownCgroupCounters();
  const outcome = await runAgentProcess({
    command: request.command,
    runDir,
    removeRunDir: true,
    stdin: request.stdin,
    limits: request.limits,
    env: { ...request.env, HOME: runDir, TMPDIR: runDir, ...(stateDir === undefined ? {} : { SWARM_STATE_DIR: stateDir }) },
    signal: stopped.signal,
    // Each chunk as it comes; the outcome is written after the last (the process's streams end before it closes).
    onOutput: (stream, chunk) => output.write(`${JSON.stringify({ output: { stream, data: chunk.toString('base64') } } satisfies OutputLine)}\n`),
    ...(counters === undefined ? {} : { cgroup: counters }),
    // TemporaryFileSystem= in the unit: the run's TMPDIR (/tmp/run) and /dev/shm, each of the unit's size.
    capped: [
      { path: tmpdir(), what: 'its TMPDIR (the run directory)', bytes: request.limits.tmpBytes },
      { path: '/dev/shm', what: 'its /dev/shm', bytes: request.limits.tmpBytes },
    ],
  });
  await answer(outcome);

  /** The answer is the whole exchange: closing our side then ends the connection, and this process with it. */
  async function answer(outcome: AgentOutcome): Promise<void> {
    await new Promise<void>((resolve) => output.write(`${JSON.stringify(outcome)}\n`, () => resolve()));
    input.destroy();
    output.end();
  }
}

function outputOf(line: string): OutputLine['output'] | undefined {
  if (!line.startsWith('{"output":')) return undefined;
  try {
    const { output } = JSON.parse(line) as OutputLine;
    return (output.stream === 'stdout' || output.stream === 'stderr') && typeof output.data === 'string' ? output : undefined;
  } catch {
    return undefined;
  }
}

function readLine(input: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(0x0a);
      if (newline >= 0) {
        cleanup();
        input.pause();
        // Anything after the line is not ours to read; a well-behaved daemon sends nothing more.
        resolve(buffered.subarray(0, newline).toString('utf8'));
      } else if (buffered.length > MAX_REQUEST_BYTES) {
        cleanup();
        reject(new Error(`the request is larger than ${MAX_REQUEST_BYTES} bytes`));
      }
    };
    const onEnd = (): void => {
      cleanup();
      reject(new Error('the connection closed before a request'));
    };
    const cleanup = (): void => {
      input.off('data', onData);
      input.off('end', onEnd);
    };
    input.on('data', onData);
    input.on('end', onEnd);
  });
}

function parseRequest(line: string): AgentExecRequest {
  const request = JSON.parse(line) as Partial<AgentExecRequest>;
  const strings = (value: unknown): value is string[] => Array.isArray(value) && value.length > 0 && value.every((part) => typeof part === 'string');
  if (
    typeof request.run_id !== 'string' ||
    !RUN_ID.test(request.run_id) ||
    typeof request.agent_id !== 'string' ||
    !AGENT_ID.test(request.agent_id) ||
    !strings(request.command) ||
    typeof request.env !== 'object' ||
    request.env === null ||
    !Object.values(request.env).every((value) => typeof value === 'string') ||
    typeof request.stdin !== 'string' ||
    typeof request.limits !== 'object' ||
    request.limits === null
  ) {
    throw new Error('the request is not an agent run');
  }
  return request as AgentExecRequest;
}

// Agent runs as systemd services (docs/operations.md "Agent isolation"): on an installed node systemd listens on
// the agent socket (svc-swarm-node-agent.socket, Accept=yes) and starts one svc-swarm-node-agent@.service per
// connection, in a sandbox of its own: a private /tmp for the run's directory, the node's etc/ and var/ out of sight,
// cgroup limits. The service starts as root with only CAP_SETUID, CAP_SETGID, CAP_CHOWN and CAP_KILL: it runs the
// agent as a uid of its agent's own on this node (./agent-ids.ts, the claims bubblewrap's runs use too), which the
// kernel leaves with no capability, in a state directory only that uid may enter (./agent-state-dir.ts), from a
// launcher (./launcher.ts) that stays root, so the agent cannot reach it; once the agent ended it becomes that
// uid itself to read what the run left (which leaves it undumpable: the kernel's rule for a process that changes its
// uid, so the agent's processes cannot reach it then either). The daemon keeps none of the privileges a uid
// switch needs, so its own unit stays as locked down as before.
//
// The exchange on the connection: the daemon sends one JSON line (AgentExecRequest) and keeps its side open; the
// service (`swarm-node agent-exec`, stdin and stdout on the connection) runs the agent, sends what it writes as it
// comes (a JSON line {"output": {stream, data}} per chunk, the bytes in base64: the run's log) and answers one JSON
// line (AgentOutcome) last; for a run that asked, it then serves the run's artifacts on the same connection
// (./artifact-socket.ts). The daemon closing the connection early stops the agent: the node is stopping, or the run
// was cancelled.
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import {
  DEFAULT_AGENT_LIMITS,
  runAgentProcess,
  RUN_CANCELLED,
  type AgentLimits,
  type AgentOutcome,
  type AgentProcessSpec,
  type EventSink,
} from './agent-process.js';
import { ownCgroupCounters } from './cgroup-probe.js';
import { MAX_ARTIFACT_BYTES } from '../../contract/jobs.js';
import { directoryArtifacts, type HeldArtifacts } from './artifact-source.js';
import { agentIdentity, claimedHomes, HOST_AGENT_UIDS_DIR } from './agent-ids.js';
import { prepareAgentStateDir } from './agent-state-dir.js';
import { mountStateImage } from './unit-state-image.js';
import { hideHomes, otherHomePaths } from './unit-hidden-homes.js';
import { INSTALL_PATH } from '../../contract/claims.js';
import type { RunIdentity } from './isolation.js';
import { FramedReader, serveArtifactRequests, socketArtifacts } from './artifact-socket.js';
import type { KitEvent } from './kit-channel.js';
import { MAX_RUN_EVENT_BYTES, RUN_EVENT_TYPES, runEventBytes } from '../../contract/run-events.js';

export interface AgentExecRequest {
  run_id: string;
  agent_id: string;
  command: string[];
  /** The agent's environment but for its directories (HOME, TMPDIR, SWARM_STATE_DIR), which the service decides. */
  env: Record<string, string>;
  stdin: string;
  limits: AgentLimits;
  /** Keep the connection after the outcome for the daemon's requests of the run's artifacts (./artifact-socket.ts). */
  artifacts?: boolean;
  /** Give the agent the kit's channel (./kit-channel.ts), its events sent on as lines {"kit_event": …}; the attempt for its hello. */
  kit?: { attempt: number };
}

/** A request line is the agent's input (at most 1 MiB as the service stores it) and a little more. */
const MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** An outcome line: the agent's output (1 MiB at most) and its stderr's tail. */
const MAX_OUTCOME_BYTES = 4 * 1024 * 1024;
const RUN_ID = /^[A-Za-z0-9-]{1,64}$/;
// A catalog agent (agent_…) or a user's own (contract/own-agents.ts): a directory name, never a path.
const AGENT_ID = /^[a-z][a-z0-9_]{1,63}$/;

/** A line of the service's answer that carries output rather than the outcome. */
interface OutputLine {
  output: { stream: 'stdout' | 'stderr'; data: string };
}

/** A line of the service's answer that carries an event the agent emitted on its kit channel. */
interface KitEventLine {
  kit_event: KitEvent;
}

/** The outcome, and for a run that asked for them, its artifacts until released (the connection stays open). */
export interface SocketRunOutcome {
  outcome: AgentOutcome;
  artifacts?: HeldArtifacts;
}

/** The daemon's side: the agent's outcome, however the connection ends; its output to `onOutput` as it comes. */
export async function execViaSocket(
  socketPath: string,
  request: AgentExecRequest,
  signal?: AbortSignal,
  onOutput?: AgentProcessSpec['onOutput'],
  onEvent?: EventSink,
): Promise<SocketRunOutcome> {
  const socket = connect(socketPath);
  // Errors reach the reader (or the wait for the connection); none may go unheard and crash the daemon.
  socket.on('error', () => undefined);
  const aborted = (): SocketRunOutcome => {
    socket.destroy();
    return signal?.reason === RUN_CANCELLED
      ? { outcome: { status: 'failed', error: 'cancelled', message: 'the run was cancelled by its user', stderrTail: '' } }
      : { outcome: { status: 'failed', error: 'aborted', message: 'the run was stopped: the node is shutting down', stderrTail: '' } };
  };
  const failed = (message: string): SocketRunOutcome => {
    socket.destroy();
    return { outcome: { status: 'failed', error: 'spawn', message, stderrTail: '' } };
  };
  try {
    await once(socket, 'connect', signal === undefined ? {} : { signal });
  } catch (error) {
    if (signal?.aborted === true) return aborted();
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    return failed(`the agent service could not be reached at ${socketPath} (${code}): is svc-swarm-node-agent.socket running?`);
  }
  socket.write(`${JSON.stringify(request)}\n`);
  const reader = new FramedReader(socket);
  // Output lines as they come, then the outcome's line.
  const line = (async (): Promise<string | undefined> => {
    for (;;) {
      const next = await reader.line(MAX_OUTCOME_BYTES);
      const event = next === undefined ? undefined : kitEventOf(next);
      if (event !== undefined) {
        if (event !== null) onEvent?.(event);
        continue;
      }
      const output = next === undefined ? undefined : outputOf(next);
      if (output === undefined) return next;
      onOutput?.(output.stream, Buffer.from(output.data, 'base64'));
    }
  })().catch(() => undefined);
  const stop = new Promise<'aborted'>((resolve) => {
    if (signal?.aborted === true) resolve('aborted');
    signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const first = await Promise.race([line, stop]);
  if (first === 'aborted') return aborted();
  let outcome: AgentOutcome;
  try {
    outcome = JSON.parse(first ?? '') as AgentOutcome;
  } catch {
    return failed('the agent service ended without an outcome (see journalctl -u "svc-swarm-node-agent@*")');
  }
  if (request.artifacts !== true) {
    socket.destroy();
    return { outcome };
  }
  return { outcome, artifacts: { source: socketArtifacts(socket, reader), release: () => void socket.destroy() } };
}

/** The service's side (`swarm-node agent-exec`): one request in, the agent run in this sandbox, one outcome out. */
export async function serveAgentExec(input: Readable, output: Writable, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const stopped = new AbortController();
  const reader = new FramedReader(input);
  // The daemon gone (it stopped, or cancelled the run) while the agent still writes: nobody to tell, not a crash.
  output.on('error', () => stopped.abort());
  let request: AgentExecRequest;
  try {
    request = parseRequest((await reader.line(MAX_REQUEST_BYTES)) ?? '');
  } catch (error) {
    return answer({ status: 'failed', error: 'spawn', message: `agent-exec: ${(error as Error).message}`, stderrTail: '' });
  }
  // The daemon sends nothing more while the agent runs: its side closing is what stops the run. After the outcome,
  // what it sends are its requests for the artifacts.
  const next = reader.line(MAX_REQUEST_BYTES).catch(() => undefined);
  void next.then((line) => line === undefined && stopped.abort());
  const runDir = join(tmpdir(), `swarm-run-${request.run_id}`);
  let identity: RunIdentity | undefined;
  let stateDir: string | undefined;
  const stateParent = env.STATE_DIRECTORY?.split(':').find((dir) => dir !== dirname(HOST_AGENT_UIDS_DIR));
  try {
    identity = agentIdentityHere(request.agent_id, env, stateParent);
    stateDir = prepareStateDir(request.agent_id, identity, stateParent);
  } catch (error) {
    return answer({ status: 'failed', error: 'spawn', message: `agent-exec: ${(error as Error).message}`, stderrTail: '' });
  }
  // The state's cap is this release's, whatever the request says: the daemon asking for more gets no bigger image.
  const stateBytes = DEFAULT_AGENT_LIMITS.stateBytes;
  const state =
    identity !== undefined && stateDir !== undefined && stateParent !== undefined
      ? await mountStateImage(stateParent, request.agent_id, stateDir, identity, stateBytes, env.SWARM_NODE_HOME ?? '')
      : undefined;
  if (state?.mounted === false) {
    return answer({
      status: 'failed',
      error: state.reason === 'too_large' ? 'disk_quota' : 'spawn',
      message: `agent-exec: ${state.message}`,
      stderrTail: '',
    });
  }
  // The unit's own tmpfs (ARTIFACTS_DIRECTORY, the size of a run's artifacts); a unit rendered before it had one: a
  // directory in the run's TMPDIR, within that tmpfs's size.
  const artifactsDir = env.ARTIFACTS_DIRECTORY ?? join(tmpdir(), `swarm-artifacts-${request.run_id}`);
  mkdirSync(artifactsDir, { recursive: true, mode: 0o700 });
  if (identity !== undefined) {
    const needed = [stateParent, tmpdir(), artifactsDir, dirname(process.execPath)].filter((path) => path !== undefined);
    const others = otherHomePaths(env.SWARM_NODE_HOME ?? '', INSTALL_PATH, claimedHomes(HOST_AGENT_UIDS_DIR), needed);
    const hidden = await hideHomes(others).catch((error: { stderr?: string; message: string }) => error.stderr?.trim() || error.message);
    if (typeof hidden === 'string')
      return answer({
        status: 'failed',
        error: 'spawn',
        message: `agent-exec: another node home could not be hidden: ${hidden}`,
        stderrTail: '',
      });
  }
  // The unit's cgroup is this run's alone: its counters say whether the run reached MemoryMax= or TasksMax=.
  const counters = ownCgroupCounters();
  const outcome = await runAgentProcess({
    command: request.command,
    runDir,
    // As the agent's uid, its directory is not root's to remove: it goes with the unit's tmpfs.
    removeRunDir: identity === undefined,
    // The launcher stays root, out of the agent's reach; nsenter (no namespace) makes only setgroups, setgid and
    // setuid, which the unit's system-call filter lets through (setpriv's capset and setresuid it refuses).
    ...(identity === undefined ? {} : { asAgent: ['nsenter', `--setuid=${identity.uid}`, `--setgid=${identity.gid}`, '--'] }),
    stdin: request.stdin,
    limits: request.limits,
    env: {
      ...request.env,
      HOME: runDir,
      TMPDIR: runDir,
      SWARM_ARTIFACTS_DIR: artifactsDir,
      ...(stateDir === undefined ? {} : { SWARM_STATE_DIR: stateDir }),
    },
    signal: stopped.signal,
    // Each chunk as it comes; the outcome is written after the last (the process's streams end before it closes).
    onOutput: (stream, chunk) =>
      output.write(`${JSON.stringify({ output: { stream, data: chunk.toString('base64') } } satisfies OutputLine)}\n`),
    ...(request.kit === undefined
      ? {}
      : { kit: kitOf(request, (event) => output.write(`${JSON.stringify({ kit_event: event } satisfies KitEventLine)}\n`)) }),
    ...(counters === undefined ? {} : { cgroup: counters }),
    // TemporaryFileSystem= in the unit: the run's TMPDIR (/tmp/run), /dev/shm and its artifacts, each of the unit's size.
    capped: [
      { path: tmpdir(), what: 'its TMPDIR (the run directory)', bytes: request.limits.tmpBytes },
      { path: '/dev/shm', what: 'its /dev/shm', bytes: request.limits.tmpBytes },
      ...(env.ARTIFACTS_DIRECTORY === undefined
        ? []
        : [{ path: artifactsDir, what: 'its artifacts directory', bytes: request.limits.artifactsBytes }]),
      ...(state?.mounted === true && stateDir !== undefined
        ? [{ path: stateDir, what: 'its state directory', bytes: stateBytes, margin: true }]
        : []),
    ],
  });
  const serveArtifacts = request.artifacts === true && !stopped.signal.aborted && becomeAgent(identity);
  await answer(
    outcome,
    serveArtifacts ? () => serveArtifactRequests(reader, output, directoryArtifacts(artifactsDir, MAX_ARTIFACT_BYTES), next) : undefined,
  );

  /**
   * The outcome, then the artifacts while the daemon asks for them: closing our side then ends the connection, and
   * this process with it.
   */
  async function answer(outcome: AgentOutcome, artifacts?: () => Promise<void>): Promise<void> {
    await new Promise<void>((resolve) => output.write(`${JSON.stringify(outcome)}\n`, () => resolve()));
    await artifacts?.().catch(() => undefined);
    input.destroy();
    output.end();
  }
}

/**
 * The agent's uid here: under a unit that starts as root (SWARM_NODE_HOME names its node), its claim on this host,
 * never taken over from another home (none is visible in here); none under an older unit's dynamic user, which the
 * agent shares. An agent is never run as root.
 */
function agentIdentityHere(agentId: string, env: NodeJS.ProcessEnv, stateParent: string | undefined): RunIdentity | undefined {
  if (process.getuid?.() !== 0) return undefined;
  if (env.SWARM_NODE_HOME === undefined) throw new Error('runs as root without SWARM_NODE_HOME (its unit sets it): no agent uid to run as');
  return agentIdentity(env.SWARM_NODE_HOME, agentId, HOST_AGENT_UIDS_DIR, {
    reclaim: false,
    ...(stateParent === undefined ? {} : { keeps: join(stateParent, agentId) }),
  });
}

/**
 * The agent's state directory (SWARM_STATE_DIR) in `parent`, the unit's StateDirectory= of the agents (systemd lists
 * a unit's state directories sorted: theirs is the one that does not hold the uid claims): its own uid's, or this
 * user's under an older unit.
 */
function prepareStateDir(agentId: string, identity: RunIdentity | undefined, parent: string | undefined): string | undefined {
  if (parent === undefined) return undefined;
  if (identity !== undefined) return prepareAgentStateDir(parent, agentId, identity);
  const dir = join(parent, agentId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * After the agent ended: this process becomes its uid, with every capability gone, to read the artifacts it left
 * (0600, its own). false when that fails: the run's artifacts are not served.
 */
function becomeAgent(identity: RunIdentity | undefined): boolean {
  if (identity === undefined) return true;
  const { setgroups, setgid, setuid } = process;
  if (setgroups === undefined || setgid === undefined || setuid === undefined) return false;
  try {
    setgroups([]);
    setgid(identity.gid);
    setuid(identity.uid);
    return process.getuid?.() === identity.uid;
  } catch {
    return false;
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

/** The run's kit channel as a request asks for it: its run, attempt and output limit, its events to `onEvent`. */
export function kitOf(request: AgentExecRequest, onEvent: EventSink): NonNullable<AgentProcessSpec['kit']> {
  return {
    context: {
      run_id: request.run_id,
      agent_id: request.agent_id,
      attempt: request.kit?.attempt ?? 1,
      maxOutputBytes: request.limits.outputBytes,
    },
    onEvent,
  };
}

/** An event line (null: one that is not a well-formed event, dropped), undefined for a line of another kind. */
function kitEventOf(line: string): KitEvent | null | undefined {
  if (!line.startsWith('{"kit_event":')) return undefined;
  try {
    const { kit_event: event } = JSON.parse(line) as KitEventLine;
    const wellFormed =
      (RUN_EVENT_TYPES as readonly string[]).includes(event.type) &&
      typeof event.at === 'number' &&
      (event.name === undefined || typeof event.name === 'string') &&
      runEventBytes(event.data) <= MAX_RUN_EVENT_BYTES;
    return wellFormed ? event : null;
  } catch {
    return null;
  }
}

function parseRequest(line: string): AgentExecRequest {
  const request = JSON.parse(line) as Partial<AgentExecRequest>;
  const strings = (value: unknown): value is string[] =>
    Array.isArray(value) && value.length > 0 && value.every((part) => typeof part === 'string');
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

// One run of an agent on this host (docs/sections/agent-upload.md "The runtime contract"): its bundle, the JSON on
// its stdin, its environment (nothing of the node's: no SVC_* variable, no token, no credential), its sandbox
// (./isolation.ts), its limits (./agent-process.ts); the outcome as the node reports it to the service.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf } from '../../contract/errors.js';
import { DEFAULT_AGENT_SOCKET, egressSocketOf } from '../host/config.js';
import { nodePaths } from '../host/location.js';
import { execViaSocket, kitOf, type AgentExecRequest } from './agent-exec.js';
import {
  DEFAULT_AGENT_LIMITS,
  RUN_CANCELLED,
  runAgentProcess,
  type AgentLimits,
  type AgentOutcome,
  type AgentProcessSpec,
  type EventSink,
} from './agent-process.js';
import { egressUnavailable, resolveIsolation, type IsolationMode } from './isolation.js';
import { installBundle, type BundleFetch } from './bundle-install.js';
import { bundleDirs, findBundle, resolveEntry, type Bundle } from './bundles.js';
import { createSandboxedRunner, type SandboxedRunner } from './run-sandboxed.js';
import { syscallFilterOf } from './syscall-filter.js';
import type { RunSecrets } from '../../contract/secrets.js';
import { redactJson, type Redact } from '../../lib/redact.js';
import { secretsEnv, secretsRedactor } from './agent-secrets.js';
import { MAX_ARTIFACT_BYTES } from '../../contract/jobs.js';
import { directoryArtifacts, type ArtifactSource, type HeldArtifacts } from './artifact-source.js';
import { makeArtifactSpace, removeLeftoverRunDirs } from './artifact-space.js';
import { KIT_PROTOCOL_VERSION } from '../../contract/kit-protocol.js';

export interface LocalRunner {
  /** How runs are kept from the node: a systemd service each, a sandbox each (bubblewrap's or unshare's), or none. */
  readonly isolation: IsolationMode;
  /** The sandboxed runner's view of the host (its cgroups), for what the daemon says at start. */
  readonly sandbox: SandboxedRunner | undefined;
  /**
   * Runs it: `onOutput` gets the agent's stdout and stderr as they come (the run's log); `onArtifacts` what the run
   * left in its artifacts directory once the agent ended, and the directory goes when it resolves (docs/api.md "Run
   * artifacts"); `onEvent` the events it emits on its kit channel (./kit-channel.ts); aborting `signal` stops the agent.
   */
  run(
    run: LocalRun,
    signal?: AbortSignal,
    onOutput?: OutputSink,
    onArtifacts?: ArtifactHandler,
    onEvent?: EventSink,
  ): Promise<LocalOutcome>;
  /** Removes what runs cut short left behind (processes, cgroups, directories), but that of the runs `inFlight` names. */
  removeLeftovers(inFlight: (runId: string) => boolean): Promise<number>;
}

export interface LocalRun {
  run_id: string;
  agent_id: string;
  user_id: string;
  tier: string;
  input: unknown;
  /** The uploaded bundle to run, fetched and verified by its SHA-256 when not installed yet; absent: the built-in agent. */
  bundle_digest?: string;
  /** Its time limit as the service set it; absent (an older service): the agent's agent.json, else the default. */
  timeout_seconds?: number;
  /** The secrets its agent declares, as the service handed them: its environment, and redacted from what it wrote. */
  secrets?: RunSecrets;
  /** Which attempt this is (the kit's hello says it; its events carry it): 1 unless the service says otherwise. */
  attempt?: number;
}

/** Where the agent's output goes as it comes. */
export type OutputSink = NonNullable<AgentProcessSpec['onOutput']>;

/** What the node reports: the agent's one JSON document, or {error, message} saying why it failed. */
export type LocalOutcome = { status: 'succeeded'; output: unknown } | { status: 'failed'; output: { error: string; message: string } };

/** Takes a run's artifacts (the executor uploads them); never fails the run. */
export type ArtifactHandler = (source: ArtifactSource, outcome: LocalOutcome) => Promise<void>;

export interface LocalRunnerOptions {
  home: string;
  varDir: string;
  /** The package this program runs from: its agents/, docs/sections and node_modules. */
  packageDir: string;
  limits?: Partial<AgentLimits>;
  /** What `auto` resolves to here when not given; tests of the unsandboxed path pass 'none'. */
  isolation?: IsolationMode;
  /** Where systemd listens for runs (isolation 'systemd'). */
  agentSocket?: string;
  /** Downloads an uploaded bundle's archive by digest (the node credential's GET /v1/swarm/bundles/{digest}). */
  fetchBundle?: BundleFetch;
  /** The host's agent uid claims (./agent-ids.ts); tests keep theirs apart. */
  agentUidsDir?: string;
}

/** The part of the agent's stderr a failure's message carries: its last lines, bounded. */
const STDERR_IN_MESSAGE_CHARS = 600;

export function createLocalRunner(options: LocalRunnerOptions): LocalRunner {
  const agentSocket = options.agentSocket ?? DEFAULT_AGENT_SOCKET;
  const isolation = options.isolation ?? resolveIsolation('auto', agentSocket, 'auto', options.packageDir);
  const limits = { ...DEFAULT_AGENT_LIMITS, ...options.limits };
  const dirs = isolation === 'systemd' ? undefined : prepareVar(options.varDir);
  // Without one for this architecture (a checkout for another), runs go without: the isolation report says so.
  const syscallFilter = syscallFilterOf(options.packageDir).path;
  const sandbox =
    isolation === 'bubblewrap' || isolation === 'unshare'
      ? createSandboxedRunner({
          home: options.home,
          varDir: options.varDir,
          limits,
          tool: isolation,
          ...(options.agentUidsDir === undefined ? {} : { agentUidsDir: options.agentUidsDir }),
          ...(syscallFilter === undefined ? {} : { syscallFilter }),
        })
      : undefined;

  async function runAgent(
    request: AgentExecRequest,
    bundle: Bundle,
    signal: AbortSignal | undefined,
    onOutput: OutputSink | undefined,
    onEvent: EventSink | undefined,
  ): Promise<{ outcome: AgentOutcome; artifacts?: HeldArtifacts }> {
    // Every run gets the kit's channel: an agent without the kit never reads it, and runs as it always did.
    const kit = kitOf(request, onEvent ?? (() => undefined));
    const network = bundle.manifest.network ?? 'none';
    if (isolation === 'systemd') {
      // The agent's network is its unit's: an egress agent's runs go to the egress socket's twin of the agent unit.
      if (network === 'egress') {
        const unavailable = egressUnavailable(agentSocket, nodePaths(options.home).name);
        if (unavailable !== undefined) {
          const message = `${request.agent_id} asks for network egress (agent.json "network": "egress"), and ${unavailable}`;
          return { outcome: { status: 'failed', error: 'spawn', message, stderrTail: '' } };
        }
      }
      return execViaSocket(
        network === 'egress' ? egressSocketOf(agentSocket) : agentSocket,
        { ...request, artifacts: true },
        signal,
        onOutput,
        onEvent,
      );
    }
    if (sandbox !== undefined) {
      const readOnly = [
        bundle.dir,
        process.execPath,
        join(options.packageDir, 'docs', 'sections'),
        join(options.packageDir, 'node_modules'),
      ].filter((path) => existsSync(path));
      return sandbox.run({ ...request, network, readOnly }, signal, onOutput, kit);
    }
    // none: this user, a directory in var/runs, the state and the artifacts directories the node made.
    const runDir = join(dirs!.runs, request.run_id);
    const stateDir = join(dirs!.state, request.agent_id);
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const space = await makeArtifactSpace(options.varDir, request.run_id, limits.artifactsBytes);
    const outcome = await runAgentProcess({
      ...request,
      kit,
      runDir,
      removeRunDir: true,
      env: { ...request.env, HOME: runDir, TMPDIR: runDir, SWARM_STATE_DIR: stateDir, SWARM_ARTIFACTS_DIR: space.dir },
      ...(signal === undefined ? {} : { signal }),
      ...(onOutput === undefined ? {} : { onOutput }),
    });
    return { outcome, artifacts: { source: directoryArtifacts(space.dir, MAX_ARTIFACT_BYTES), release: () => space.release() } };
  }

  return {
    isolation,
    sandbox,
    async removeLeftovers(inFlight) {
      const killed = (await sandbox?.removeLeftovers(inFlight)) ?? 0;
      if (dirs === undefined) return killed;
      // var/runs: unsandboxed runs' directories, or those of runs an earlier release ran under uids of their own.
      return (
        killed +
        removeLeftoverRunDirs(dirs.runs, inFlight) +
        (sandbox === undefined ? removeLeftoverRunDirs(join(options.varDir, 'artifacts'), inFlight) : 0)
      );
    },
    async run(run, signal, onOutput, onArtifacts, onEvent) {
      let bundle: Bundle | undefined;
      try {
        bundle =
          run.bundle_digest === undefined
            ? findBundle(bundleDirs(options.home, options.packageDir), run.agent_id)
            : await installBundle(options.varDir, run.agent_id, run.bundle_digest, options.fetchBundle);
      } catch (error) {
        return failed('bundle', messageOf(error));
      }
      if (bundle === undefined) return failed('spawn', `this node has no bundle of ${run.agent_id}`);
      // The service's word for the run; else the agent's agent.json; else the node's own limit (DEFAULT_RUN_SECONDS).
      const timeoutMs = (run.timeout_seconds ?? bundle.manifest.timeout_seconds ?? 0) * 1000 || limits.timeoutMs;
      const request: AgentExecRequest = {
        run_id: run.run_id,
        agent_id: run.agent_id,
        command: resolveEntry(bundle),
        // The run document names the kit's protocol the node speaks on the run's channel (docs/api.md "The kit's channel").
        stdin: JSON.stringify({
          run_id: run.run_id,
          agent_id: run.agent_id,
          user_id: run.user_id,
          tier: run.tier,
          input: run.input ?? {},
          kit_protocol: KIT_PROTOCOL_VERSION,
        }),
        limits: { ...limits, timeoutMs },
        kit: { attempt: run.attempt ?? 1 },
        env: {
          // First, so that the node's own variables below are never a secret's.
          ...secretsEnv(run.secrets),
          // How long it has: work that can stop early (indexing) stops in time to answer.
          SWARM_TIMEOUT_SECONDS: String(Math.ceil(timeoutMs / 1000)),
          PATH: '/usr/local/bin:/usr/bin:/bin',
          LANG: 'C.UTF-8',
          SWARM_RUN_ID: run.run_id,
          SWARM_AGENT_ID: run.agent_id,
          SWARM_AGENT_DIR: bundle.dir,
          SWARM_NODE_HOME: options.home,
          SWARM_DOCS_DIR: join(options.packageDir, 'docs', 'sections'),
        },
      };
      const ran = await runAgent(request, bundle, signal, onOutput, onEvent);
      // Redacted here, before the result is journaled or reported: neither the node's disk nor the service sees them.
      const outcome = localOutcome(ran.outcome, secretsRedactor(run.secrets), signal);
      try {
        if (ran.artifacts !== undefined && onArtifacts !== undefined) await onArtifacts(ran.artifacts.source, outcome);
      } catch {
        // What became of the artifacts is the handler's to tell; the run's outcome stands.
      } finally {
        await ran.artifacts?.release();
      }
      return outcome;
    },
  };
}

function localOutcome(ended: AgentOutcome, redact: Redact, signal: AbortSignal | undefined): LocalOutcome {
  if (ended.status === 'succeeded') return { status: 'succeeded', output: redactJson(ended.output, redact) };
  // However the sandbox reported the stop (the agent's own exit, aborted), a cancelled run ends cancelled.
  if (signal?.aborted === true && signal.reason === RUN_CANCELLED) return failed('cancelled', 'the run was cancelled by its user');
  const tail = ended.stderrTail.trim().slice(-STDERR_IN_MESSAGE_CHARS);
  return failed(ended.error, redact(tail === '' ? ended.message : `${ended.message}: ${tail}`));
}

function failed(error: string, message: string): LocalOutcome {
  return { status: 'failed', output: { error, message } };
}

/**
 * var/runs and var/state, the daemon's own (0700): unsandboxed runs make their directory in var/runs; sandboxed
 * ones have theirs in their own /tmp. var/ itself keeps its mode (install's 0711).
 */
function prepareVar(varDir: string): { runs: string; state: string } {
  const dirs = { runs: join(varDir, 'runs'), state: join(varDir, 'state') };
  for (const dir of [dirs.runs, dirs.state]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
  }
  return dirs;
}

// One run of an agent on this host (docs/sections/agent-upload.md "The runtime contract"): its bundle, the JSON on
// its stdin, its environment (nothing of the node's: no SVC_* variable, no token, no credential), its sandbox
// (./isolation.ts), its limits (./agent-process.ts); the outcome as the node reports it to the service.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf } from '../../contract/errors.js';
import { DEFAULT_AGENT_SOCKET } from '../host/config.js';
import { execViaSocket, type AgentExecRequest } from './agent-exec.js';
import { DEFAULT_AGENT_LIMITS, runAgentProcess, type AgentLimits, type AgentOutcome } from './agent-process.js';
import { resolveIsolation, type IsolationMode } from './isolation.js';
import { installBundle, type BundleFetch } from './bundle-install.js';
import { bundleDirs, findBundle, resolveEntry, type Bundle } from './bundles.js';
import { createSandboxedRunner, type SandboxedRunner } from './run-sandboxed.js';
import { MAX_ARTIFACT_BYTES } from '../../contract/jobs.js';
import { directoryArtifacts, type ArtifactSource, type HeldArtifacts } from './artifact-source.js';
import { makeArtifactSpace, removeLeftoverRunDirs } from './artifact-space.js';

export interface LocalRunner {
  /** How runs are kept from the node: a systemd service each, a bubblewrap sandbox each, or none. */
  readonly isolation: IsolationMode;
  /** The sandboxed runner's view of the host (its cgroups), for what the daemon says at start. */
  readonly sandbox: SandboxedRunner | undefined;
  /**
   * Runs it; `onArtifacts` is given what the run left in its artifacts directory once the agent ended, and the
   * directory goes when it resolves (docs/api.md "Run artifacts").
   */
  run(run: LocalRun, signal?: AbortSignal, onArtifacts?: ArtifactHandler): Promise<LocalOutcome>;
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
}

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
  const isolation = options.isolation ?? resolveIsolation('auto', agentSocket);
  const limits = { ...DEFAULT_AGENT_LIMITS, ...options.limits };
  const dirs = isolation === 'systemd' ? undefined : prepareVar(options.varDir);
  const sandbox =
    isolation === 'bubblewrap'
      ? createSandboxedRunner({ home: options.home, varDir: options.varDir, limits, ...(options.agentUidsDir === undefined ? {} : { agentUidsDir: options.agentUidsDir }) })
      : undefined;

  async function runAgent(request: AgentExecRequest, bundle: Bundle, signal: AbortSignal | undefined): Promise<{ outcome: AgentOutcome; artifacts?: HeldArtifacts }> {
    const network = bundle.manifest.network ?? 'none';
    if (isolation === 'systemd') {
      if (network === 'egress') {
        const message = `${request.agent_id} asks for network egress (agent.json "network": "egress"), and this node's systemd agent runs have no network (IPAddressDeny=any)`;
        return { outcome: { status: 'failed', error: 'spawn', message, stderrTail: '' } };
      }
      return execViaSocket(agentSocket, { ...request, artifacts: true }, signal);
    }
    if (sandbox !== undefined) {
      const readOnly = [bundle.dir, process.execPath, join(options.packageDir, 'docs', 'sections'), join(options.packageDir, 'node_modules')].filter((path) => existsSync(path));
      return sandbox.run({ ...request, network, readOnly }, signal);
    }
    // none: this user, a directory in var/runs, the state and the artifacts directories the node made.
    const runDir = join(dirs!.runs, request.run_id);
    const stateDir = join(dirs!.state, request.agent_id);
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const space = await makeArtifactSpace(options.varDir, request.run_id, limits.artifactsBytes);
    const outcome = await runAgentProcess({
      ...request,
      runDir,
      removeRunDir: true,
      env: { ...request.env, HOME: runDir, TMPDIR: runDir, SWARM_STATE_DIR: stateDir, SWARM_ARTIFACTS_DIR: space.dir },
      ...(signal === undefined ? {} : { signal }),
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
      return killed + removeLeftoverRunDirs(dirs.runs, inFlight) + (sandbox === undefined ? removeLeftoverRunDirs(join(options.varDir, 'artifacts'), inFlight) : 0);
    },
    async run(run, signal, onArtifacts) {
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
      const request: AgentExecRequest = {
        run_id: run.run_id,
        agent_id: run.agent_id,
        command: resolveEntry(bundle),
        stdin: JSON.stringify({ run_id: run.run_id, agent_id: run.agent_id, user_id: run.user_id, tier: run.tier, input: run.input ?? {} }),
        limits,
        env: {
          PATH: '/usr/local/bin:/usr/bin:/bin',
          LANG: 'C.UTF-8',
          SWARM_RUN_ID: run.run_id,
          SWARM_AGENT_ID: run.agent_id,
          SWARM_AGENT_DIR: bundle.dir,
          SWARM_NODE_HOME: options.home,
          SWARM_DOCS_DIR: join(options.packageDir, 'docs', 'sections'),
        },
      };
      const ran = await runAgent(request, bundle, signal);
      const outcome = localOutcome(ran.outcome);
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

function localOutcome(ended: AgentOutcome): LocalOutcome {
  if (ended.status === 'succeeded') return { status: 'succeeded', output: ended.output };
  const tail = ended.stderrTail.trim().slice(-STDERR_IN_MESSAGE_CHARS);
  return failed(ended.error, tail === '' ? ended.message : `${ended.message}: ${tail}`);
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

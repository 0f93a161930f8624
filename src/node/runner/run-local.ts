// One run of an agent on this host (docs/sections/agent-upload.md "The runtime contract"): its bundle, the JSON on
// its stdin, its environment (nothing of the node's: no SVC_* variable, no token, no credential), its own user and
// directories (./isolation.ts), its limits (./agent-process.ts); the outcome as the node reports it to the service.
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { messageOf } from '../../contract/errors.js';
import { DEFAULT_AGENT_SOCKET } from '../host/config.js';
import { VAR_DIR_MODE } from '../host/location.js';
import { execViaSocket, type AgentExecRequest } from './agent-exec.js';
import { asUser, DEFAULT_AGENT_LIMITS, runAgentProcess, type AgentLimits, type AgentOutcome } from './agent-process.js';
import { agentGid, canSwitchUsers, RunUidPool, type IsolationMode, type RunIdentity } from './isolation.js';
import { installBundle, type BundleFetch } from './bundle-install.js';
import { bundleDirs, findBundle, resolveEntry, type Bundle } from './bundles.js';

export interface LocalRunner {
  /** How runs are kept from the node: a systemd service each, a uid each, or (no privilege) the node's own user. */
  readonly isolation: IsolationMode;
  run(run: LocalRun, signal?: AbortSignal): Promise<LocalOutcome>;
  /** Removes the directories runs cut short left behind, but those of the runs `inFlight` names. */
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

export interface LocalRunnerOptions {
  home: string;
  varDir: string;
  /** The package this program runs from: its agents/ and docs/sections. */
  packageDir: string;
  limits?: Partial<AgentLimits>;
  /** Defaults to a uid of each run's own when this process may switch users; tests of the same-user path pass 'none'. */
  isolation?: IsolationMode;
  /** Where systemd listens for runs (isolation 'systemd'). */
  agentSocket?: string;
  /** Downloads an uploaded bundle's archive by digest (the node credential's GET /v1/swarm/bundles/{digest}). */
  fetchBundle?: BundleFetch;
}

/** The part of the agent's stderr a failure's message carries: its last lines, bounded. */
const STDERR_IN_MESSAGE_CHARS = 600;

/** The run uid pool's slots, one per host (hostRunSlotsDir). */
export const HOST_RUN_SLOTS_DIR = '/run/svc-swarm-node/run-uids';

export function createLocalRunner(options: LocalRunnerOptions): LocalRunner {
  const isolation = options.isolation ?? (canSwitchUsers() ? 'uid' : 'none');
  const dirs = isolation === 'systemd' ? undefined : prepareRunDirs(options.varDir, isolation);
  const pool = dirs !== undefined && isolation === 'uid' ? new RunUidPool(hostRunSlotsDir() ?? dirs.slots) : undefined;
  const limits = { ...DEFAULT_AGENT_LIMITS, ...options.limits };

  /** Here, under a uid of the pool or this process's own. */
  async function runHere(request: AgentExecRequest, runDirs: NonNullable<typeof dirs>, signal: AbortSignal | undefined): Promise<AgentOutcome> {
    // Checked at each run: an operator who opens the path need not restart the daemon.
    const closed = isolation === 'uid' ? closedAncestor(options.varDir) : undefined;
    if (closed !== undefined) {
      const mode = (statSync(closed).mode & 0o777).toString(8).padStart(4, '0');
      const message = `a run under a user of its own cannot reach ${runDirs.runs}: ${closed} (mode ${mode}) lets no other user pass; chmod o+x ${closed} (passing, not listing), or set agent_isolation none`;
      return { status: 'failed', error: 'spawn', message, stderrTail: '' };
    }
    let identity: RunIdentity | undefined;
    if (pool !== undefined) {
      const slot = pool.take();
      if (slot === undefined) return { status: 'failed', error: 'spawn', message: 'every run slot of this node is busy', stderrTail: '' };
      identity = { uid: slot.uid, gid: agentGid(request.agent_id) };
      // What a run cut short by a crash left running under this uid ends before the uid serves another run.
      if (slot.abandoned) await asUser(identity, 'kill -s KILL -- -1 2>/dev/null; exit 0').catch(() => undefined);
    }
    const runDir = join(runDirs.runs, request.run_id);
    const stateDir = join(runDirs.state, request.agent_id);
    try {
      return await runAgentProcess({
        ...request,
        runDir,
        stateDir,
        identity,
        env: { ...request.env, HOME: runDir, TMPDIR: runDir, SWARM_STATE_DIR: stateDir },
        ...(signal === undefined ? {} : { signal }),
      });
    } finally {
      if (identity !== undefined) pool!.release(identity.uid);
    }
  }

  return {
    isolation,
    removeLeftovers: async (inFlight) => (dirs === undefined ? 0 : removeLeftoverRunDirs(options.varDir, inFlight)),
    async run(run, signal) {
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
      const outcome =
        dirs === undefined
          ? await execViaSocket(options.agentSocket ?? DEFAULT_AGENT_SOCKET, request, signal)
          : await runHere(request, dirs, signal);
      if (outcome.status === 'succeeded') return { status: 'succeeded', output: outcome.output };
      const tail = outcome.stderrTail.trim().slice(-STDERR_IN_MESSAGE_CHARS);
      return failed(outcome.error, tail === '' ? outcome.message : `${outcome.message}: ${tail}`);
    },
  };
}

function failed(error: string, message: string): LocalOutcome {
  return { status: 'failed', output: { error, message } };
}

/**
 * The run and state directories, and the uid slots. With uids of their own, runs must reach var/runs and var/state
 * (var/ 0711: enter, not list) and make their own directory there (1733: write, not list, sticky: no one removes
 * another's); the journal and everything else in var/ stay 0600/0700.
 */
function prepareRunDirs(varDir: string, isolation: 'uid' | 'none'): { runs: string; state: string; slots: string } {
  const dirs = { runs: join(varDir, 'runs'), state: join(varDir, 'state'), slots: join(varDir, 'run-slots') };
  const shared = isolation === 'uid' ? 0o1733 : 0o700;
  mkdirSync(varDir, { recursive: true, mode: VAR_DIR_MODE });
  if (isolation === 'uid') chmodSync(varDir, VAR_DIR_MODE);
  for (const [dir, mode] of [
    [dirs.runs, shared],
    [dirs.state, shared],
    [dirs.slots, 0o700],
  ] as const) {
    mkdirSync(dir, { recursive: true, mode });
    chmodSync(dir, mode);
  }
  return dirs;
}

/**
 * The uid slots of every node home on this host: the uids are the host's, and the end of a run kills every process
 * of its uid, so two homes (two nodes run by root, a node and a `sudo swarm-node run` in another home) with a pool
 * each would kill each other's agents. Under /run, so a reboot (which ends every run) empties it. undefined where
 * it cannot be made (a process with CAP_SETUID but not root): the home's own slots then.
 */
function hostRunSlotsDir(): string | undefined {
  try {
    mkdirSync(HOST_RUN_SLOTS_DIR, { recursive: true, mode: 0o700 });
    return HOST_RUN_SLOTS_DIR;
  } catch {
    return undefined;
  }
}

/**
 * The first directory above `varDir` that other users may not pass through (no o+x), if any: a run's own user
 * could not reach its directory in var/runs. A home under a 0700 directory (mkdtemp, a home directory) does this.
 */
function closedAncestor(varDir: string): string | undefined {
  for (let dir = dirname(varDir); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Removes what runs cut short left in var/runs (a crash of the node mid-run), as their own users when they had one:
 * the daemon holds no right to remove another user's files. `inFlight` names the runs another live process of this
 * node still executes (a `swarm-node run` beside the daemon): their directories stay. Processes left under a run
 * uid are killed when the uid's slot is next taken over (RunUidPool.take), never here: the uid may serve a live run.
 */
async function removeLeftoverRunDirs(varDir: string, inFlight: (runId: string) => boolean): Promise<number> {
  const runs = join(varDir, 'runs');
  if (!existsSync(runs)) return 0;
  let removed = 0;
  for (const name of readdirSync(runs)) {
    if (inFlight(name)) continue;
    const dir = join(runs, name);
    // Another process of this node (a `run` beside the daemon) may be removing it at the same moment.
    const stat = statSync(dir, { throwIfNoEntry: false });
    if (stat === undefined) continue;
    const { uid, gid } = stat;
    if (uid === process.getuid?.()) {
      rmSync(dir, { recursive: true, force: true });
    } else {
      await asUser({ uid, gid }, 'rm -rf -- "$1"', dir).catch(() => undefined);
    }
    removed += 1;
  }
  return removed;
}

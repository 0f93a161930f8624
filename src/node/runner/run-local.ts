// One run of an agent on this host (docs/sections/agent-upload.md "The runtime contract"): its bundle, the JSON on
// its stdin, its environment (nothing of the node's: no SVC_* variable, no token, no credential), its own user and
// directories (./isolation.ts), its limits (./agent-process.ts); the outcome as the node reports it to the service.
import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { asUser, DEFAULT_AGENT_LIMITS, runAgentProcess, type AgentLimits } from './agent-process.js';
import { VAR_DIR_MODE } from '../location.js';
import { agentGid, canSwitchUsers, RunUidPool, type RunIdentity } from './isolation.js';
import { bundleDirs, findBundle, resolveEntry } from './bundles.js';

export interface LocalRunner {
  /** `uid`: each run under a uid of its own; `none`: under the node's own user (no privilege to switch). */
  readonly isolation: 'uid' | 'none';
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
}

/** What the node reports: the agent's one JSON document, or {error, message} saying why it failed. */
export type LocalOutcome = { status: 'succeeded'; output: unknown } | { status: 'failed'; output: { error: string; message: string } };

export interface LocalRunnerOptions {
  home: string;
  varDir: string;
  /** The package this program runs from: its agents/ and docs/sections. */
  packageDir: string;
  limits?: Partial<AgentLimits>;
  /** Defaults to whether this process may switch users; tests of the same-user path pass 'none'. */
  isolation?: 'uid' | 'none';
}

/** The part of the agent's stderr a failure's message carries: its last lines, bounded. */
const STDERR_IN_MESSAGE_CHARS = 600;

export function createLocalRunner(options: LocalRunnerOptions): LocalRunner {
  const isolation = options.isolation ?? (canSwitchUsers() ? 'uid' : 'none');
  const dirs = prepareRunDirs(options.varDir, isolation);
  const pool = isolation === 'uid' ? new RunUidPool(dirs.slots) : undefined;
  const limits = { ...DEFAULT_AGENT_LIMITS, ...options.limits };

  return {
    isolation,
    removeLeftovers: (inFlight) => removeLeftoverRunDirs(options.varDir, inFlight),
    async run(run, signal) {
      const bundle = findBundle(bundleDirs(options.home, options.packageDir), run.agent_id);
      if (bundle === undefined) return failed('spawn', `this node has no bundle of ${run.agent_id}`);
      let identity: RunIdentity | undefined;
      if (pool !== undefined) {
        const slot = pool.take();
        if (slot === undefined) return failed('spawn', 'every run slot of this node is busy');
        identity = { uid: slot.uid, gid: agentGid(run.agent_id) };
        // What a run cut short by a crash left running under this uid ends before the uid serves another run.
        if (slot.abandoned) await asUser(identity, 'kill -s KILL -- -1 2>/dev/null; exit 0').catch(() => undefined);
      }
      const runDir = join(dirs.runs, run.run_id);
      const stateDir = join(dirs.state, run.agent_id);
      try {
        const outcome = await runAgentProcess({
          command: resolveEntry(bundle),
          runDir,
          stateDir,
          stdin: JSON.stringify({ run_id: run.run_id, agent_id: run.agent_id, user_id: run.user_id, tier: run.tier, input: run.input ?? {} }),
          identity,
          limits,
          env: {
            PATH: '/usr/local/bin:/usr/bin:/bin',
            HOME: runDir,
            TMPDIR: runDir,
            LANG: 'C.UTF-8',
            SWARM_RUN_ID: run.run_id,
            SWARM_AGENT_ID: run.agent_id,
            SWARM_AGENT_DIR: bundle.dir,
            SWARM_STATE_DIR: stateDir,
            SWARM_NODE_HOME: options.home,
            SWARM_DOCS_DIR: join(options.packageDir, 'docs', 'sections'),
          },
          ...(signal === undefined ? {} : { signal }),
        });
        if (outcome.status === 'succeeded') return { status: 'succeeded', output: outcome.output };
        const tail = outcome.stderrTail.trim().slice(-STDERR_IN_MESSAGE_CHARS);
        return failed(outcome.error, tail === '' ? outcome.message : `${outcome.message}: ${tail}`);
      } finally {
        if (identity !== undefined) pool!.release(identity.uid);
      }
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
    const { uid, gid } = statSync(dir);
    if (uid === process.getuid?.()) {
      rmSync(dir, { recursive: true, force: true });
    } else {
      await asUser({ uid, gid }, 'rm -rf -- "$1"', dir).catch(() => undefined);
    }
    removed += 1;
  }
  return removed;
}

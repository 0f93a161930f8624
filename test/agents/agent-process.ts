// Runs a reference agent of agents/ as a node runs it: the command of its manifest's `entry`, the run document on
// stdin, a clean environment (docs/sections/starter-agents.md) and a private empty working directory.
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import Ajv2020 from 'ajv/dist/2020.js';
import { runProgram, type CliResult } from '../helpers/cli.js';
import { REPO_ROOT } from '../helpers/svc-api.js';
import { tempDir } from '../helpers/temp.js';
import { packageForOtherUsers } from '../helpers/staged-for-others.js';

export const AGENTS_DIR = join(REPO_ROOT, 'agents');
export const DOCS_SECTIONS_DIR = join(REPO_ROOT, 'docs', 'sections');

export interface AgentManifest {
  agent_id: string;
  version: string;
  entry: string[];
  input_schema: Record<string, unknown>;
  description: string;
}

export function readManifest(agentId: string, agentsDir = AGENTS_DIR): AgentManifest {
  return JSON.parse(readFileSync(join(agentsDir, agentId, 'agent.json'), 'utf8')) as AgentManifest;
}

export interface AgentRunOptions {
  tier?: string;
  /** Kept between runs; omitted: the agent gets no SWARM_STATE_DIR, as on a node that keeps no state for it. */
  stateDir?: string;
  nodeHome?: string;
  docsDir?: string;
  /** Replaces the default PATH (/usr/local/bin:/usr/bin:/bin). */
  path?: string;
  /** Written to stdin instead of the run document. */
  stdin?: string;
  /** Where the agent bundles are: this repository's agents/ unless given (a release's copy). */
  agentsDir?: string;
  /** Runs the agent as this uid and gid (through setpriv, so the test must run as root), as a node does. */
  asUser?: { uid: number; gid: number };
  /** Variables added to the agent's environment: its declared secrets, SWARM_ARTIFACTS_DIR. */
  env?: Record<string, string>;
}

export interface AgentRun extends CliResult {
  runDir: string;
}

export async function runAgentProcess(agentId: string, input: unknown, options: AgentRunOptions = {}): Promise<AgentRun> {
  // As another user, from a copy that user can read, as an installed node's release is: the checkout may be closed.
  const shared = options.asUser === undefined || options.agentsDir !== undefined ? undefined : packageForOtherUsers();
  const agentsDir = options.agentsDir ?? (shared === undefined ? AGENTS_DIR : join(shared.root, 'agents'));
  const agentDir = join(agentsDir, agentId);
  const manifest = readManifest(agentId, agentsDir);
  const runDir = tempDir('agent-run-');
  const runId = randomUUID();
  const [program, ...args] = manifest.entry;
  const env: Record<string, string> = {
    PATH: options.path ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: runDir,
    TMPDIR: runDir,
    LANG: 'C.UTF-8',
    SWARM_RUN_ID: runId,
    SWARM_AGENT_ID: agentId,
    SWARM_AGENT_DIR: agentDir,
    SWARM_NODE_HOME: options.nodeHome ?? join(runDir, 'no-node-home'),
    SWARM_DOCS_DIR: options.docsDir ?? (shared === undefined ? DOCS_SECTIONS_DIR : join(shared.root, 'docs', 'sections')),
    ...(options.stateDir === undefined ? {} : { SWARM_STATE_DIR: options.stateDir }),
    ...options.env,
  };
  const run = { run_id: runId, agent_id: agentId, user_id: 'you@example.com', tier: options.tier ?? 'svc_starter_agents', input };
  // `node` is the node's own Node binary; a file named by the entry is in the agent's bundle, not the working directory.
  const bundled = (arg: string) => (existsSync(join(agentDir, arg)) ? join(agentDir, arg) : arg);
  let command = program === 'node' ? (shared?.node ?? process.execPath) : program!;
  let argv = args.map(bundled);
  if (options.asUser) {
    const { uid, gid } = options.asUser;
    chownSync(runDir, uid, gid);
    argv = ['--reuid', String(uid), '--regid', String(gid), '--clear-groups', '--', command, ...argv];
    command = 'setpriv';
  }
  const result = await runProgram(command, argv, {
    env,
    extendEnv: false,
    cwd: runDir,
    input: options.stdin ?? JSON.stringify(run),
    timeoutMs: 60_000,
  });
  return { ...result, runDir };
}

/** The manifest's input_schema compiled as JSON Schema 2020-12, strict, as the node may check it. */
export function inputSchemaValidator(agentId: string): (input: unknown) => boolean {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  const validate = ajv.compile(readManifest(agentId).input_schema);
  return (input) => validate(input) as boolean;
}

// Runs the built swarm-node binary as a subprocess, as a user or a script would.
import { execa, type Options } from 'execa';
import { SWARM_NODE_BIN } from './svc-api.js';
import { tempDir } from './temp.js';

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout parsed, for --json runs. */
  json: any;
}

export interface NodeEnv {
  home: string;
  env: Record<string, string>;
}

/**
 * A fresh SWARM_NODE_HOME pointed at a service. Agents run as the test's own user (agent_isolation none): the
 * isolation tests ask for uid isolation themselves, in homes laid out for it.
 */
export function nodeEnv(baseUrl: string, extra: Record<string, string> = {}): NodeEnv {
  const home = tempDir('swarm-node-home-');
  return { home, env: { SWARM_NODE_HOME: home, SVC_BASE_URL: baseUrl, NO_COLOR: '1', SWARM_AGENT_ISOLATION: 'none', ...extra } };
}

/**
 * A swarm-node command as the CLI prints it in a remedy or a "Next:" line on a node of `nodeEnv`: its home and its
 * service carried, so that it acts on them when typed (src/cli/invocation.ts, docs/api.md "Remedies").
 */
export function asPrinted(node: NodeEnv, command: string): string {
  const sudo = command.startsWith('sudo ') ? 'sudo ' : '';
  return `${sudo}SWARM_NODE_HOME=${node.home} ${command.slice(sudo.length)} --base-url ${node.env.SVC_BASE_URL}`;
}

export interface RunOptions extends Pick<Options, 'cwd'> {
  env?: Record<string, string>;
  /** false: only `env`, as a fresh shell would have; true (default): the test runner's environment plus `env`. */
  extendEnv?: boolean;
  input?: string;
  timeoutMs?: number;
}

/** Runs a program to its end, never rejecting: the test reads the exit code, both streams and parsed stdout. */
export async function runProgram(command: string, args: string[], options: RunOptions = {}): Promise<CliResult> {
  const result = await execa(command, args, {
    env: options.env ?? {},
    extendEnv: options.extendEnv ?? true,
    reject: false,
    timeout: options.timeoutMs ?? 30_000,
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let json: unknown;
  try {
    json = JSON.parse(String(result.stdout));
  } catch {
    json = undefined;
  }
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr), json };
}

export function swarmNode(args: string[], options: RunOptions = {}): Promise<CliResult> {
  return runProgram('node', [SWARM_NODE_BIN, ...args], options);
}

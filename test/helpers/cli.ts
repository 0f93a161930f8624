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

/** A fresh SWARM_NODE_HOME pointed at a service. */
export function nodeEnv(baseUrl: string, extra: Record<string, string> = {}): NodeEnv {
  const home = tempDir('swarm-node-home-');
  return { home, env: { SWARM_NODE_HOME: home, SVC_BASE_URL: baseUrl, NO_COLOR: '1', ...extra } };
}

export async function swarmNode(args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number } & Pick<Options, 'cwd'> = {}): Promise<CliResult> {
  const result = await execa('node', [SWARM_NODE_BIN, ...args], {
    env: options.env ?? {},
    extendEnv: true,
    reject: false,
    timeout: options.timeoutMs ?? 30_000,
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let json: unknown;
  try {
    json = JSON.parse(String(result.stdout));
  } catch {
    json = undefined;
  }
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr), json };
}

// Who a run is asked for by, on this host (run-agent.ts RunCaller). An enrolled node asks with its own credential
// and runs the agent here, in the isolation its configuration asks for; elsewhere a signed-in user asks with the JWT.
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { DEFAULT_AGENT_SOCKET, type AgentIsolation } from '../host/config.js';
import { currentNodeCredential, type NodeEnrollment } from '../identity/credentials.js';
import type { NodePaths } from '../host/location.js';
import { NodeApi } from '../service/node-api.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import type { RunCaller } from '../runs/run-agent.js';
import { resolveIsolation } from '../runner/isolation.js';
import { createLocalRunner } from '../runner/run-local.js';
import type { AgentLimits } from '../runner/agent-process.js';
import type { AgentSyscallFilter } from '../runner/syscall-filter.js';
import type { ServiceClient } from '../service/service-client.js';
import { Executor } from './executor.js';

export interface NodeCallerDeps {
  node: NodeEnrollment & { credential: string };
  client: ServiceClient;
  db: SqliteDatabase;
  clock: Clock;
  pid: number;
  version: string;
  paths: NodePaths;
  isolation: AgentIsolation;
  /** Where systemd listens for agent runs (config agent_socket); the default one when not given. */
  agentSocket?: string;
  /** config agent_syscall_filter: whether an installed root node runs agents without a system-call filter. */
  syscallFilter?: AgentSyscallFilter;
  /** The runs' limits where not the defaults (runner/agent-process.ts): tests give small ones. */
  limits?: Partial<AgentLimits>;
}

export type NodeCaller = Extract<RunCaller, { kind: 'node' }>;

export function nodeCaller(deps: NodeCallerDeps): NodeCaller {
  // Renewals and results of runs in flight carry the credential in force when they are sent: a rotation retires the
  // old one at once, and a run must not lose its lease, nor its result, to it.
  const api = new NodeApi(deps.client, () => currentNodeCredential(deps.paths.credentialsFile, deps.node.node_id) ?? deps.node.credential);
  const runner = createLocalRunner({
    home: deps.paths.home,
    varDir: deps.paths.varDir,
    packageDir: runningPackageDir(),
    isolation: resolveIsolation(deps.isolation, deps.agentSocket ?? DEFAULT_AGENT_SOCKET, deps.syscallFilter),
    agentSocket: deps.agentSocket ?? DEFAULT_AGENT_SOCKET,
    fetchBundle: (digest, file) => api.bundle(digest, file),
    ...(deps.limits === undefined ? {} : { limits: deps.limits }),
  });
  const executor = new Executor({
    db: deps.db,
    api,
    runner,
    clock: deps.clock,
    pid: deps.pid,
    version: deps.version,
    tier: deps.node.tier_id,
  });
  return { kind: 'node', bearer: deps.node.credential, user_id: deps.node.user_id, node_id: deps.node.node_id, executor };
}

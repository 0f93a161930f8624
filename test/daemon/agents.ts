// The agents the daemon tests run: an operator's own bundle of each catalog agent id, installed in the node's home
// (it takes precedence over the package's reference agent, src/node/runner/bundles.ts), that answers after a delay
// the test chooses, or once the test releases it. Every start and end is appended to a file under the node's home,
// so a test can count how often an agent started for a run and how many ran at once, without sleeping.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_IDS } from '../../src/contract/agents.js';
import type { NodeEnv } from '../helpers/cli.js';
import { installTestBundle } from '../helpers/bundles.js';

/** How a test agent behaves: answers `delayMs` after it starts, or once released (releaseAgents, releaseRun). */
export type AgentBehaviour = { delayMs: number } | 'held';

export interface AgentEvent {
  event: 'start' | 'end' | 'orphaned';
  run_id: string;
  agent_id: string;
  pid: number;
  /** Epoch ms on this host. */
  at: number;
}

/** Where the agents write their events and look for their release (under the node's home, as the agent sees it). */
export function agentsDir(node: NodeEnv): string {
  return join(node.home, 'test-agents');
}

/**
 * The bundle's program. It reads its run from stdin, records `start`, waits, records `end` and answers with the run,
 * its input, and the contents of `host-fact` in the node's home (a fact only this host knows). An agent whose daemon
 * died (SIGKILL) records `orphaned` and exits: under systemd the unit's cgroup is killed with the daemon, and a test
 * must leave no process behind.
 */
export function testAgentProgram(behaviour: AgentBehaviour): string {
  return `import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
const behaviour = ${JSON.stringify(behaviour)};
const dir = join(process.env.SWARM_NODE_HOME, 'test-agents');
let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', () => {
  const run = JSON.parse(input);
  const record = (event) =>
    appendFileSync(join(dir, 'events.log'), JSON.stringify({ event, run_id: run.run_id, agent_id: run.agent_id, pid: process.pid, at: Date.now() }) + '\\n');
  // The daemon, read before the start is recorded: a test that sees the start and kills the daemon finds the agent gone.
  const parent = process.ppid;
  record('start');
  const started = Date.now();
  const done = () =>
    behaviour === 'held'
      ? existsSync(join(dir, 'release')) || existsSync(join(dir, 'release-' + run.run_id))
      : Date.now() - started >= behaviour.delayMs;
  const poll = setInterval(() => {
    if (process.ppid !== parent || parent === 1) {
      clearInterval(poll);
      record('orphaned');
      process.exit(3);
    }
    if (!done()) return;
    clearInterval(poll);
    const factFile = join(process.env.SWARM_NODE_HOME, 'host-fact');
    const host_fact = existsSync(factFile) ? readFileSync(factFile, 'utf8').trim() : null;
    record('end');
    process.stdout.write(JSON.stringify({ agent: run.agent_id, run_id: run.run_id, summary: 'test agent', host_fact, input: run.input }));
  }, 10);
});
`;
}

/** Installs a test bundle for every catalog agent: `behaviours` names the slow or held ones, the rest answer at once. */
export function installTestAgents(node: NodeEnv, behaviours: Record<string, AgentBehaviour> = {}): void {
  mkdirSync(agentsDir(node), { recursive: true });
  for (const agentId of AGENT_IDS) installTestBundle(node.home, agentId, testAgentProgram(behaviours[agentId] ?? { delayMs: 0 }));
}

/** Every held agent answers (those running now and those started later). */
export function releaseAgents(node: NodeEnv): void {
  writeFileSync(join(agentsDir(node), 'release'), '');
}

/** The held agent of this run answers. */
export function releaseRun(node: NodeEnv, runId: string): void {
  writeFileSync(join(agentsDir(node), `release-${runId}`), '');
}

export function agentEvents(node: NodeEnv, kind?: AgentEvent['event']): AgentEvent[] {
  const file = join(agentsDir(node), 'events.log');
  if (!existsSync(file)) return [];
  const events = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AgentEvent);
  return kind === undefined ? events : events.filter((event) => event.event === kind);
}

/** How many times an agent started for each run. */
export function startsByRun(node: NodeEnv): Map<string, number> {
  const starts = new Map<string, number>();
  for (const event of agentEvents(node, 'start')) starts.set(event.run_id, (starts.get(event.run_id) ?? 0) + 1);
  return starts;
}

/** The most agents that ran at once, from the recorded starts and ends (an end at the same ms as a start comes first). */
export function mostAtOnce(node: NodeEnv): number {
  const changes = agentEvents(node)
    .filter((event) => event.event !== 'orphaned')
    .map((event) => ({ at: event.at, delta: event.event === 'start' ? 1 : -1 }))
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let most = 0;
  for (const change of changes) {
    running += change.delta;
    most = Math.max(most, running);
  }
  return most;
}

/** Writes a random fact into the node's home that only this host knows; the test agents echo it. */
export function writeHostFact(node: NodeEnv, fact: string): void {
  writeFileSync(join(node.home, 'host-fact'), `${fact}\n`);
}

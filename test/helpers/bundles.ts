// Agent bundles a test controls (one that waits, fails, floods its output, probes its sandbox), installed in a
// node's home as an operator's own bundle of a catalog agent id: it takes precedence over the package's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes `<home>/agents/<agentId>/` with `program` as main.mjs. The program gets the run's JSON on stdin and prints
 * its one JSON document on stdout, as every agent does (docs/sections/agent-upload.md).
 */
export function installTestBundle(home: string, agentId: string, program: string): string {
  const dir = join(home, 'agents', agentId);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(join(dir, 'agent.json'), JSON.stringify({ agent_id: agentId, version: '0.0.0-test', entry: ['node', 'main.mjs'], input_schema: { type: 'object' } }));
  writeFileSync(join(dir, 'main.mjs'), program);
  return dir;
}

/** The run's JSON from stdin, then `body` (which may use `run`). */
export function agentProgram(body: string): string {
  return `let input = '';
process.stdin.on('data', (chunk) => (input += chunk));
process.stdin.on('end', async () => {
  const run = JSON.parse(input);
  ${body}
});
`;
}

/** Answers once `releaseFile` exists (the test decides when the agent finishes). */
export function heldAgentProgram(releaseFile: string): string {
  return agentProgram(`const { existsSync } = await import('node:fs');
  const poll = setInterval(() => {
    if (!existsSync(${JSON.stringify(releaseFile)})) return;
    clearInterval(poll);
    process.stdout.write(JSON.stringify({ agent: run.agent_id, summary: 'released' }));
  }, 20);`);
}

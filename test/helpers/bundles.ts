// Agent bundles a test controls (one that waits, fails, floods its output, probes its sandbox), installed in a
// node's home as an operator's own bundle of a catalog agent id: it takes precedence over the package's.
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './svc-api.js';

/**
 * An input each catalog agent's built-in input_schema accepts. The service checks every run's input against it
 * before the charge, whatever bundle the node runs; a test bundle ignores it.
 */
export const CONTRACT_INPUTS: Readonly<Record<string, Record<string, string>>> = {
  agent_ops_monitor_004: {},
  agent_dev_review_012: { repo: '/srv/app' },
  agent_research_rag_015: { corpus: '/srv/docs', question: 'Where are the backups?' },
  agent_svc_skills_005: { question: 'What is a node?' },
  agent_sales_outreach_008: { leads: '/srv/leads.csv', template: 'Hello {{name}}' },
};

/** `--input key=value` flags giving CONTRACT_INPUTS[agentId]. */
export function contractInputFlags(agentId: string): string[] {
  return Object.entries(CONTRACT_INPUTS[agentId] ?? {}).flatMap(([key, value]) => ['--input', `${key}=${value}`]);
}

/**
 * Writes `<home>/agents/<agentId>/` with `program` as main.mjs. The program gets the run's JSON on stdin and prints
 * its one JSON document on stdout, as every agent does (docs/sections/agent-upload.md). `manifest`: more of agent.json
 * (its `network`).
 */
export function installTestBundle(home: string, agentId: string, program: string, manifest: Record<string, unknown> = {}): string {
  const dir = join(home, 'agents', agentId);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  writeFileSync(
    join(dir, 'agent.json'),
    JSON.stringify({
      agent_id: agentId,
      version: '0.0.0-test',
      entry: ['node', 'main.mjs'],
      input_schema: { type: 'object' },
      ...manifest,
    }),
  );
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

/**
 * Writes `<home>/agents/<agentId>/` as a bundle on the agent kit: `files` (its entry among them) and the kit as the
 * packer puts it into an uploaded bundle (swarm_kit/, this package's copy).
 */
export function installKitBundle(
  home: string,
  agentId: string,
  files: Record<string, string>,
  entry: string[] = ['node', 'main.mjs'],
): string {
  const dir = join(home, 'agents', agentId);
  mkdirSync(join(dir, 'swarm_kit'), { recursive: true, mode: 0o755 });
  writeFileSync(
    join(dir, 'agent.json'),
    JSON.stringify({ agent_id: agentId, version: '0.0.0-test', entry, input_schema: { type: 'object' } }),
  );
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  const kit = join(REPO_ROOT, 'kit', 'swarm_kit');
  for (const name of readdirSync(kit).filter((name) => !name.startsWith('__pycache__')))
    copyFileSync(join(kit, name), join(dir, 'swarm_kit', name));
  return dir;
}

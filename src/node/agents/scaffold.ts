// swarm-node agent init DIR --id NAME (docs/sections/agent-upload.md "Start a bundle"): a bundle that works as it is,
// the way `gh extension create` starts an extension. An agent of one's own (an id not in the catalog) or a version of
// one's own of a catalog agent; JavaScript (main.mjs) or TypeScript (main.ts, which the node's Node.js runs by
// stripping its types), with the run protocol's helper vendored beside it (agent-io.mjs, the reference agents' own
// copy) so the entry reads its input with a JSON parser, never a shell's sed.
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { isOwnAgentId } from '../../contract/own-agents.js';
import { runningPackageDir } from '../../lib/package-dir.js';

export interface ScaffoldResult {
  dir: string;
  agent_id: string;
  own: boolean;
  lang: ScaffoldLanguage;
  version: string;
  files: string[];
}

export type ScaffoldLanguage = 'js' | 'ts';
export const SCAFFOLD_VERSION = '0.1.0';
/** The run protocol's helper, as every reference agent carries it (agents/<agent_id>/agent-io.mjs). */
const HELPER_SOURCE = join('agents', 'agent_ops_monitor_004', 'agent-io.mjs');

export function scaffoldAgent(dir: string, agentId: string, lang: ScaffoldLanguage = 'js', packageDir = runningPackageDir()): ScaffoldResult {
  const sku = findAgentSku(agentId);
  if (sku === undefined && !isOwnAgentId(agentId)) {
    throw new SvcError('usage', `${JSON.stringify(agentId)} is neither a catalog agent nor an id for an agent of your own`, {
      remedy: 'Name your agent with 2-48 lower-case letters, digits and _ (not starting with agent_), for example: swarm-node agent init ./my-agent --id my_agent',
    });
  }
  const target = resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0) {
    // A directory beside the one given: naming the same one again would fail the same way.
    throw new SvcError('usage', `${target} is not empty; init writes into a new or empty directory`, {
      remedy: `Name a new directory: swarm-node agent init ${dir.replace(/\/+$/, '')}-2 --id ${agentId}${lang === 'ts' ? ' --lang ts' : ''}`,
    });
  }
  mkdirSync(target, { recursive: true, mode: 0o755 });
  const entry = lang === 'ts' ? 'main.ts' : 'main.mjs';
  const manifest = {
    agent_id: agentId,
    version: SCAFFOLD_VERSION,
    entry: ['node', entry],
    description: sku === undefined ? `My own agent ${agentId}.` : `My own ${sku.name}.`,
    input_schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        // The service checks this before a run is charged: an input it refuses costs nothing.
        name: { type: 'string', description: 'Who to greet', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9 ._-]+$' },
      },
    },
  };
  writeFileSync(join(target, 'agent.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
  copyFileSync(join(packageDir, HELPER_SOURCE), join(target, 'agent-io.mjs'));
  writeFileSync(join(target, entry), lang === 'ts' ? typeScriptEntry(agentId) : javaScriptEntry(agentId), { mode: 0o644 });
  writeFileSync(join(target, 'README.md'), readme(agentId, entry), { mode: 0o644 });
  return { dir: target, agent_id: agentId, own: sku === undefined, lang, version: SCAFFOLD_VERSION, files: ['README.md', 'agent-io.mjs', 'agent.json', entry] };
}

const PROTOCOL_NOTE = (agentId: string) => `// ${agentId}: one run per process. The node writes one JSON document on stdin, {"run_id", "agent_id", "user_id",
// "tier", "input": {...}}, "input" already checked against agent.json's input_schema; what \`work\` returns is printed
// as the one JSON document of the answer (at most 1 MiB). Throw InputError for a bad input (exit 2), any other error
// to fail (exit 1): a failed run is refunded. Logs go to stderr. $SWARM_STATE_DIR is kept between runs.`;

function javaScriptEntry(agentId: string): string {
  return `${PROTOCOL_NOTE(agentId)}
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { hostname } from 'node:os';

await runAgent('${agentId}', async (input, run) => {
  refuseUnknownFields(input, ['name']);
  const name = input.name ?? 'world';
  if (typeof name !== 'string') throw new InputError('name: must be a string');
  process.stderr.write(\`run \${run.run_id} on \${hostname()}\\n\`);
  return { summary: \`Hello, \${name}, from ${agentId} on \${hostname()}\`, run_id: run.run_id };
});
`;
}

function typeScriptEntry(agentId: string): string {
  return `${PROTOCOL_NOTE(agentId)}
// The node's Node.js (22.18 or newer) runs this file as it is, stripping its types; no build step.
import { InputError, refuseUnknownFields, runAgent } from './agent-io.mjs';
import { hostname } from 'node:os';

interface Input {
  name?: string;
}

interface Run {
  run_id: string;
}

await runAgent('${agentId}', async (input: Input, run: Run) => {
  refuseUnknownFields(input, ['name']);
  const name = input.name ?? 'world';
  if (typeof name !== 'string') throw new InputError('name: must be a string');
  process.stderr.write(\`run \${run.run_id} on \${hostname()}\\n\`);
  return { summary: \`Hello, \${name}, from ${agentId} on \${hostname()}\`, run_id: run.run_id };
});
`;
}

function readme(agentId: string, entry: string): string {
  return `# ${agentId}

An agent bundle: \`agent.json\` (its id, version, entry and the JSON Schema of its input), \`${entry}\` (the agent)
and \`agent-io.mjs\` (the run protocol: read the run from stdin, answer one JSON document on stdout).

\`\`\`sh
swarm-node agent run-local . --input name=Ada     # run it here as a node would, unbilled
swarm-node agent upload .                         # then it runs on your nodes
swarm-node register ${agentId}                    # on each node that should serve it
swarm-node run ${agentId} --input name=Ada
\`\`\`

Raise \`version\` in agent.json before each upload of new contents. See \`swarm-node docs agent-upload\`.
`;
}

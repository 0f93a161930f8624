// swarm-node agent init DIR --id NAME (docs/sections/agent-upload.md "Start a bundle"): a bundle that works as it is,
// the way `gh extension create` starts an extension. An agent of one's own (an id not in the catalog) or a version of
// one's own of a catalog agent; JavaScript (main.mjs), TypeScript (main.ts, which the node's Node.js runs by
// stripping its types) or Python (main.py, the host's python3), on the agent kit (kit/swarm_kit).
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { isOwnAgentId } from '../../contract/own-agents.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import { KIT_DIR } from './bundle-pack.js';

export interface ScaffoldResult {
  dir: string;
  agent_id: string;
  own: boolean;
  lang: ScaffoldLanguage;
  version: string;
  files: string[];
}

export type ScaffoldLanguage = 'js' | 'ts' | 'py';
export const SCAFFOLD_VERSION = '0.1.0';
const ENTRIES: Record<ScaffoldLanguage, { file: string; command: string[]; source: (agentId: string) => string }> = {
  js: { file: 'main.mjs', command: ['node', 'main.mjs'], source: javaScriptEntry },
  ts: { file: 'main.ts', command: ['node', 'main.ts'], source: typeScriptEntry },
  py: { file: 'main.py', command: ['python3', 'main.py'], source: pythonEntry },
};

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
  const { file: entry, command, source } = ENTRIES[lang];
  const manifest = {
    agent_id: agentId,
    version: SCAFFOLD_VERSION,
    entry: command,
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
  // The kit, so the entry runs as it is and an editor knows its types; packing puts this package's copy in its place.
  const kitSource = join(packageDir, 'kit', KIT_DIR);
  mkdirSync(join(target, KIT_DIR), { mode: 0o755 });
  for (const name of readdirSync(kitSource).filter((name) => !name.startsWith('__pycache__')))
    copyFileSync(join(kitSource, name), join(target, KIT_DIR, name));
  writeFileSync(join(target, entry), source(agentId), { mode: 0o644 });
  writeFileSync(join(target, 'README.md'), readme(agentId, entry), { mode: 0o644 });
  return { dir: target, agent_id: agentId, own: sku === undefined, lang, version: SCAFFOLD_VERSION, files: ['README.md', 'agent.json', entry, `${KIT_DIR}/`] };
}

const PROTOCOL_NOTE = (agentId: string, comment: string) =>
  [
    `${agentId}: one run per process, on the agent kit (swarm_kit/, kit/README.md in swarm-node's package). The run's`,
    'input is already checked against agent.json\'s input_schema; what `work` returns is the run\'s result (at most',
    '1 MiB of JSON). An InputError or any other error fails the run, refunded. Logs go to stderr, events to the kit,',
    'files for the user into SWARM_ARTIFACTS_DIR; $SWARM_STATE_DIR is kept between runs.',
  ]
    .map((line) => `${comment} ${line}`)
    .join('\n');

function javaScriptEntry(agentId: string): string {
  return `${PROTOCOL_NOTE(agentId, '//')}
import * as kit from './swarm_kit/kit.mjs';
import { hostname } from 'node:os';

await kit.runAgent(async (input, run) => {
  const name = input.name ?? 'world';
  kit.log(\`run \${run.run_id} on \${hostname()}\`);
  await kit.progress(1, 1, 'greeted');
  return { summary: \`Hello, \${name}, from ${agentId} on \${hostname()}\`, run_id: run.run_id };
});
`;
}

function typeScriptEntry(agentId: string): string {
  return `${PROTOCOL_NOTE(agentId, '//')}
// The node's Node.js (22.18 or newer) runs this file as it is, stripping its types; no build step.
import * as kit from './swarm_kit/kit.mjs';
import { hostname } from 'node:os';

interface Input {
  name?: string;
}

await kit.runAgent<Input>(async (input, run) => {
  const name = input.name ?? 'world';
  kit.log(\`run \${run.run_id} on \${hostname()}\`);
  await kit.progress(1, 1, 'greeted');
  return { summary: \`Hello, \${name}, from ${agentId} on \${hostname()}\`, run_id: run.run_id };
});
`;
}

function pythonEntry(agentId: string): string {
  return `${PROTOCOL_NOTE(agentId, '#')}
# The host's python3 (3.9 or newer) and its standard library: a node installs no package.
import socket

import swarm_kit as kit


def work(input, run):
    name = input.get("name", "world")
    kit.log(f"run {run['run_id']} on {socket.gethostname()}")
    kit.progress(1, 1, "greeted")
    return {"summary": f"Hello, {name}, from ${agentId} on {socket.gethostname()}", "run_id": run["run_id"]}


kit.run_agent(work)
`;
}

function readme(agentId: string, entry: string): string {
  return `# ${agentId}

An agent bundle: \`agent.json\` (its id, version, entry and the JSON Schema of its input), \`${entry}\` (the agent)
and \`swarm_kit/\`, the agent kit: the run and its input, logs, events, artifacts and the result. Packing (run-local,
upload) puts swarm-node's own copy of the kit in its place, so it is always the node's.

\`\`\`sh
swarm-node agent run-local . --input name=Ada     # run it here as a node would, unbilled
swarm-node agent upload .                         # then it runs on your nodes
swarm-node register ${agentId}                    # on each node that should serve it
swarm-node run ${agentId} --input name=Ada
\`\`\`

Raise \`version\` in agent.json before each upload of new contents. See \`swarm-node docs agent-upload\`.
`;
}

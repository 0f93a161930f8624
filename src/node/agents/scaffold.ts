// swarm-node agent init DIR --agent <agent_id> (docs/sections/agent-upload.md "Start a bundle"): a bundle that works
// as it is, the way `gh extension create` starts an extension: agent.json and an entry script in POSIX sh (no
// runtime to install on the node) that reads the run on stdin and prints one JSON document. The user edits it and
// uploads it.
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';

export interface ScaffoldResult {
  dir: string;
  agent_id: string;
  version: string;
  files: string[];
}

export const SCAFFOLD_VERSION = '0.1.0';

export function scaffoldAgent(dir: string, agentId: string): ScaffoldResult {
  const sku = findAgentSku(agentId);
  if (sku === undefined) throw new SvcError('agent_not_found', `no agent ${JSON.stringify(agentId)} in the catalog`, { remedy: 'Pick an agent_id of the catalog: swarm-node agents.' });
  const target = resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0) {
    throw new SvcError('usage', `${target} is not empty; init writes into a new or empty directory`, { remedy: `Name a new directory: swarm-node agent init ${dir.replace(/\/+$/, '')}-2 --agent ${agentId}` });
  }
  mkdirSync(target, { recursive: true, mode: 0o755 });
  const manifest = {
    agent_id: sku.agent_id,
    version: SCAFFOLD_VERSION,
    entry: ['sh', 'main.sh'],
    description: `My own ${sku.name}.`,
    input_schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', description: 'Who to greet', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9 ._-]+$' },
      },
    },
  };
  writeFileSync(join(target, 'agent.json'), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o644 });
  writeFileSync(join(target, 'main.sh'), entryScript(sku.agent_id), { mode: 0o755 });
  chmodSync(join(target, 'main.sh'), 0o755);
  return { dir: target, agent_id: sku.agent_id, version: SCAFFOLD_VERSION, files: ['agent.json', 'main.sh'] };
}

function entryScript(agentId: string): string {
  return `#!/bin/sh
# ${agentId}, your own version: one run per process.
# In:  one JSON document on stdin, {"run_id", "agent_id", "user_id", "tier", "input": {...}}; "input" has already
#      passed agent.json's input_schema at the service (so "name" below is plain letters, digits and . _ - space).
# Out: one JSON document on stdout (at most 1 MiB), exit 0. Logs go to stderr. Exit non-zero to fail the run
#      (it is then refunded). The bundle's own files are in "$SWARM_AGENT_DIR"; "$SWARM_STATE_DIR" keeps state.
# Needs a real JSON parser? Use entry ["node", "main.mjs"] (the node's own runtime) instead of sh.
set -eu

run=$(cat)
field() {
  printf '%s' "$run" | sed -n "s/.*\\"$1\\"[[:space:]]*:[[:space:]]*\\"\\([^\\"\\\\\\\\]*\\)\\".*/\\1/p"
}
run_id=$(field run_id)
name=$(field name)
host=$(uname -n)
echo "run $run_id on $host" >&2

printf '{"summary": "Hello, %s, from %s on %s", "run_id": "%s", "input_bytes": %s}\\n' \\
  "\${name:-world}" "${agentId}" "$host" "$run_id" "$(printf '%s' "$run" | wc -c | tr -d ' ')"
`;
}

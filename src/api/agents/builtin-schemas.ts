// The input_schema of each built-in reference agent (agents/<agent_id>/agent.json in the package, the bundles the
// nodes run when a user uploaded none): the service checks a run's input against it before the charge, as it does
// for an upload, so an input the agent would refuse costs nothing (docs/api.md "Agent upload"). Read once, at the
// first run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runTermsOf, type AgentManifest, type RunTerms } from '../../contract/agent-bundle.js';
import { AGENT_IDS } from '../../contract/agents.js';
import { packageRoot } from '../docs/library.js';

export interface BuiltInSchema {
  version: string;
  input_schema: Record<string, unknown>;
  terms: RunTerms;
}

let schemas: ReadonlyMap<string, BuiltInSchema> | undefined;

/** The built-in agent's manifest facts; undefined for an agent the package ships no bundle of. */
export function builtInSchema(agentId: string): BuiltInSchema | undefined {
  schemas ??= loadBuiltInSchemas(join(packageRoot(), 'agents'));
  return schemas.get(agentId);
}

export function loadBuiltInSchemas(dir: string): ReadonlyMap<string, BuiltInSchema> {
  const loaded = new Map<string, BuiltInSchema>();
  for (const agentId of AGENT_IDS) {
    let manifest: Partial<AgentManifest>;
    try {
      manifest = JSON.parse(readFileSync(join(dir, agentId, 'agent.json'), 'utf8')) as Partial<AgentManifest>;
    } catch {
      continue;
    }
    if (typeof manifest.version === 'string' && typeof manifest.input_schema === 'object' && manifest.input_schema !== null) {
      loaded.set(agentId, { version: manifest.version, input_schema: manifest.input_schema, terms: runTermsOf(manifest) });
    }
  }
  return loaded;
}

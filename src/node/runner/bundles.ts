// Agent bundles (docs/sections/agent-upload.md "Bundle format"): a directory with a manifest, agent.json
// ({agent_id, version, entry, input_schema}), and its files. The reference agents ship in the package (agents/);
// an operator's own bundle in the node's home (agents/<agent_id>/) takes precedence over the package's; a run the
// service pins to a user's upload runs that bundle from var/agents/<agent_id>/<digest>/ (./bundle-install.ts).
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { AgentManifest } from '../../contract/agent-bundle.js';
import { isAgentId } from '../../contract/agents.js';
import { runningPackageDir } from '../../lib/package-dir.js';

export type { AgentManifest };

export interface Bundle {
  dir: string;
  manifest: AgentManifest;
}

/** Where a node looks for bundles, in order: the operator's own (the home's agents/), then the package's. */
export function bundleDirs(home: string, packageDir: string): string[] {
  return [join(home, 'agents'), join(packageDir, 'agents')];
}

/** The bundle that runs `agentId` on this node: the first of `dirs` (each holding <agent_id>/) that has it. */
export function findBundle(dirs: readonly string[], agentId: string): Bundle | undefined {
  if (!isAgentId(agentId)) return undefined;
  for (const parent of dirs) {
    const dir = join(parent, agentId);
    if (existsSync(join(dir, 'agent.json'))) return { dir, manifest: readBundleManifest(dir) };
  }
  return undefined;
}

/** The input_schema of the bundle this node runs for an agent when no upload is current (the home's, else the package's). */
export function localInputSchema(home: string, agentId: string): Record<string, unknown> | undefined {
  return findBundle(bundleDirs(home, runningPackageDir()), agentId)?.manifest.input_schema;
}

export function readBundleManifest(dir: string): AgentManifest {
  const parsed = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as Partial<AgentManifest>;
  if (
    typeof parsed.agent_id !== 'string' ||
    typeof parsed.version !== 'string' ||
    !Array.isArray(parsed.entry) ||
    parsed.entry.length === 0 ||
    !parsed.entry.every((part) => typeof part === 'string') ||
    typeof parsed.input_schema !== 'object' ||
    parsed.input_schema === null
  ) {
    throw new Error(`${join(dir, 'agent.json')} is not an agent manifest`);
  }
  return parsed as AgentManifest;
}

/** The argument array the node runs: `node` → this node's runtime, `sh` → /bin/sh, bundle files → their paths. */
export function resolveEntry(bundle: Bundle): string[] {
  const [program, ...args] = bundle.manifest.entry;
  const inBundle = (name: string): string =>
    !isAbsolute(name) && !name.startsWith('-') && existsSync(join(bundle.dir, name)) ? join(bundle.dir, name) : name;
  const resolved = program === 'node' ? process.execPath : program === 'sh' ? '/bin/sh' : inBundle(program!);
  return [resolved, ...args.map(inBundle)];
}

// swarm-node agent run-local DIR (docs/sections/agent-upload.md "Try it here"): a bundle run on this host as a node
// runs an uploaded one, unbilled and without the service. It is packed and checked by the upload's own rules
// (bundle-pack.ts, the bundle reader), its input checked against its input_schema as the service checks it before a
// charge, installed by digest the way a node installs a download, and run by the node's own runner: the same stdin
// document, environment, directories and limits. As the caller's own user: a tool for the author, needing no root.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { MANIFEST_FILE } from '../../contract/agent-bundle.js';
import { SvcError } from '../../contract/errors.js';
import { compileInputSchema, withInputPrefix } from '../../contract/input-schema.js';
import { readBundleArchive } from '../../lib/bundle-archive.js';
import { runningPackageDir } from '../../lib/package-dir.js';
import { createLocalRunner, type LocalOutcome } from '../runner/run-local.js';
import { packBundleDir } from './bundle-pack.js';
import type { KitEvent } from '../runner/kit-channel.js';

export interface LocalBundleRun {
  agent_id: string;
  version: string;
  digest: string;
  run_id: string;
  state_dir: string;
  outcome: LocalOutcome;
  /** What it emitted on its kit channel, in order (docs/api.md "Run events"). */
  events: KitEvent[];
}

export interface RunLocallyOptions {
  input: Record<string, unknown>;
  /**
   * Where runs here keep what a node keeps in its home's var/: the agent's state between runs (var/state/<agent_id>)
   * and the installed bundles. Default: $XDG_CACHE_HOME/swarm-node/run-local (~/.cache/…).
   */
  home?: string;
  tier?: string;
  userId?: string;
}

export function defaultRunLocalHome(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'swarm-node', 'run-local');
}

export async function runBundleLocally(dir: string, options: RunLocallyOptions): Promise<LocalBundleRun> {
  const bundleDir = resolve(dir);
  if (!existsSync(join(bundleDir, MANIFEST_FILE))) {
    throw new SvcError('bundle_invalid', `${join(bundleDir, MANIFEST_FILE)} does not exist: a bundle directory holds agent.json`, { remedy: 'Start one, for example: swarm-node agent init ./my-agent --id my_agent' });
  }
  // The upload's rules, so a bundle that runs here is one the service takes.
  const archive = await packBundleDir(bundleDir);
  const bundle = await readBundleArchive(archive);
  const problems = withInputPrefix(compileInputSchema(bundle.manifest.input_schema).problems(options.input));
  if (problems.length > 0) {
    throw new SvcError('input_invalid', `the input does not meet ${bundle.manifest.agent_id}'s input_schema: ${problems.map((problem) => `${problem.path} ${problem.message}`).join('; ')}`, {
      extensions: { errors: problems },
    });
  }
  const digest = createHash('sha256').update(archive).digest('hex');
  const home = resolve(options.home ?? defaultRunLocalHome());
  const varDir = join(home, 'var');
  mkdirSync(varDir, { recursive: true, mode: 0o700 });
  const runner = createLocalRunner({
    home,
    varDir,
    packageDir: runningPackageDir(),
    isolation: 'none',
    // The bundle "downloaded" is the one just packed, checked by digest as a node checks a download.
    fetchBundle: async (_digest, file) => {
      writeFileSync(file, archive, { mode: 0o600 });
      return { bytes: archive.length, sha256: digest };
    },
  });
  const runId = `local-${Date.now().toString(36)}`;
  const events: KitEvent[] = [];
  // The node's own channel and its rules: a kit call refused on a node is refused here.
  const outcome = await runner.run(
    { run_id: runId, agent_id: bundle.manifest.agent_id, user_id: options.userId ?? 'you@localhost', tier: options.tier ?? 'svc_starter_agents', input: options.input, bundle_digest: digest },
    undefined,
    undefined,
    undefined,
    (event) => events.push(event),
  );
  return { agent_id: bundle.manifest.agent_id, version: bundle.manifest.version, digest, run_id: runId, state_dir: join(varDir, 'state', bundle.manifest.agent_id), outcome, events };
}

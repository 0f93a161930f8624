// An agent bundle (docs/sections/agent-upload.md "Bundle format"; docs/api.md "Agent upload"): a tar archive
// (gzip or not) of a directory holding agent.json and the agent's files. The limits and the manifest's rules live
// here, beside the catalog, so the service (which refuses a bundle) and the CLI (which checks before it uploads)
// read one table.
import { DEFAULT_RUN_SECONDS, MAX_RUN_SECONDS } from './job-limits.js';
import { isUploadableAgentId } from './own-agents.js';
import type { SchemaIssue } from './input-schema-messages.js';
import { MAX_SECRETS_PER_AGENT, secretNameProblem } from './secret-names.js';

/** The archive as uploaded (compressed when gzip): what the service stores and a node downloads. */
export const MAX_BUNDLE_BYTES = 5 * 1024 * 1024;
/** The files' contents added up, unpacked: a node's var/ is not a place for data sets. */
export const MAX_UNPACKED_BYTES = 20 * 1024 * 1024;
/** Files and directories; tar headers are 512 bytes each, so this also bounds the work of reading one. */
export const MAX_BUNDLE_ENTRIES = 1000;
/** A path inside the bundle, in bytes (ustar's name field with its prefix is 255). */
export const MAX_PATH_BYTES = 255;
export const MANIFEST_FILE = 'agent.json';
export const MAX_MANIFEST_BYTES = 64 * 1024;

/** SHA-256 of the archive's bytes, as 64 lowercase hex digits: a bundle's name wherever it is stored. */
export const DIGEST_PATTERN = '^[0-9a-f]{64}$';
/** A label chosen by the author; semver is usual but not required. Unique per user and agent. */
export const VERSION_PATTERN = '^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$';
/**
 * Entry programs the node resolves itself (src/node/runner/bundles.ts resolveEntry): its own Node.js, /bin/sh, and
 * the host's python3 (on the agents' PATH), for agents on the kit's Python module.
 */
export const ENTRY_RUNTIMES = ['node', 'sh', 'python3'] as const;
/**
 * What an agent may reach over the network (docs/operations.md "Agent isolation"): `none`, the default, is its own
 * loopback only; `egress` is the host's network, for an agent whose work is to call out (sending mail).
 */
export const AGENT_NETWORKS = ['none', 'egress'] as const;
export type AgentNetwork = (typeof AGENT_NETWORKS)[number];

export interface AgentManifest {
  agent_id: string;
  version: string;
  /** The program and its arguments: `node`, `sh` or `python3`, a file of the bundle, or an absolute path on the node. */
  entry: string[];
  input_schema: Record<string, unknown>;
  description?: string;
  /** Absent: `none`. */
  network?: AgentNetwork;
  /** The run's time limit, at most MAX_RUN_SECONDS (docs/api.md "Runs as jobs"); absent: DEFAULT_RUN_SECONDS. */
  timeout_seconds?: number;
  /** Whether a run lost with its node may run again from the start (no side effect repeats); absent: false. */
  retry_safe?: boolean;
  /** The user's secrets its runs get as environment variables of the same names (docs/api.md "Secrets"); absent: none. */
  secrets?: string[];
}

/** What a version of an agent asks of each of its runs, from its agent.json: the service holds runs to it. */
export interface RunTerms {
  timeout_seconds: number;
  retry_safe: boolean;
  /** The secrets it declares, sorted; none when it declares none (a version stored before secrets existed too). */
  secrets: string[];
}

export function runTermsOf(manifest: Pick<AgentManifest, 'timeout_seconds' | 'retry_safe' | 'secrets'>): RunTerms {
  return {
    timeout_seconds: manifest.timeout_seconds ?? DEFAULT_RUN_SECONDS,
    retry_safe: manifest.retry_safe ?? false,
    secrets: [...new Set(manifest.secrets ?? [])].sort(),
  };
}

export interface BundleProblem {
  /** A file of the bundle, or agent.json's JSON pointer (`agent.json#/entry/0`). */
  path: string;
  message: string;
}

const MANIFEST_FIELDS = new Set([
  'agent_id',
  'version',
  'entry',
  'input_schema',
  'description',
  'network',
  'timeout_seconds',
  'retry_safe',
  'secrets',
]);

export function isDigest(value: unknown): value is string {
  return typeof value === 'string' && new RegExp(DIGEST_PATTERN).test(value);
}

/**
 * What is wrong with a parsed agent.json, given the bundle's file names; none for a manifest the node can run.
 * Unknown fields are refused, as in every request body: a typo must not be silently ignored. The input_schema is
 * checked by `schemaProblems` (input-schema.ts), passed in so that this table of limits does not load Ajv.
 */
export function manifestProblems(
  value: unknown,
  files: ReadonlySet<string>,
  schemaProblems: (schema: unknown) => SchemaIssue[],
): BundleProblem[] {
  const at = (pointer: string): string => `${MANIFEST_FILE}#${pointer}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ path: at(''), message: 'must be a JSON object' }];
  const manifest = value as Record<string, unknown>;
  const problems: BundleProblem[] = [];
  for (const key of Object.keys(manifest)) {
    if (!MANIFEST_FIELDS.has(key))
      problems.push({ path: at(`/${key}`), message: `is not a manifest field (${[...MANIFEST_FIELDS].join(', ')})` });
  }
  if (!isUploadableAgentId(manifest.agent_id)) {
    problems.push({
      path: at('/agent_id'),
      message: `${JSON.stringify(manifest.agent_id ?? null)} is neither an agent_id of the catalog (swarm-node agents) nor an id of your own agent (2-48 lower-case letters, digits and _, not starting with "agent_")`,
    });
  }
  if (typeof manifest.version !== 'string' || !new RegExp(VERSION_PATTERN).test(manifest.version)) {
    problems.push({ path: at('/version'), message: 'must be a label of 1-64 letters, digits and . + _ - (for example "1.0.0")' });
  }
  problems.push(...entryProblems(manifest.entry, files));
  if (typeof manifest.input_schema !== 'object' || manifest.input_schema === null || Array.isArray(manifest.input_schema)) {
    problems.push({ path: at('/input_schema'), message: 'must be a JSON Schema object ({"type": "object", ...})' });
  } else {
    for (const problem of schemaProblems(manifest.input_schema))
      problems.push({ path: at(`/input_schema${problem.path}`), message: problem.message });
  }
  if (manifest.description !== undefined && (typeof manifest.description !== 'string' || manifest.description.length > 1000)) {
    problems.push({ path: at('/description'), message: 'must be a string of at most 1000 characters' });
  }
  if (manifest.network !== undefined && !(AGENT_NETWORKS as readonly unknown[]).includes(manifest.network)) {
    problems.push({ path: at('/network'), message: `must be one of ${AGENT_NETWORKS.map((value) => JSON.stringify(value)).join(', ')}` });
  }
  const timeout = manifest.timeout_seconds;
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_RUN_SECONDS)) {
    problems.push({
      path: at('/timeout_seconds'),
      message: `must be a whole number of seconds from 1 to ${MAX_RUN_SECONDS} (${MAX_RUN_SECONDS / 3600} hours)`,
    });
  }
  if (manifest.retry_safe !== undefined && typeof manifest.retry_safe !== 'boolean')
    problems.push({ path: at('/retry_safe'), message: 'must be true or false' });
  problems.push(...secretsProblems(manifest.secrets));
  return problems;
}

/** agent.json's `secrets`: names of the user's secrets, each once, at most MAX_SECRETS_PER_AGENT. */
function secretsProblems(secrets: unknown): BundleProblem[] {
  const path = `${MANIFEST_FILE}#/secrets`;
  if (secrets === undefined) return [];
  if (!Array.isArray(secrets) || secrets.length > MAX_SECRETS_PER_AGENT)
    return [{ path, message: `must be an array of at most ${MAX_SECRETS_PER_AGENT} secret names` }];
  const problems: BundleProblem[] = [];
  secrets.forEach((name, index) => {
    const problem = secretNameProblem(name);
    if (problem !== undefined) problems.push({ path: `${path}/${index}`, message: problem });
    else if (secrets.indexOf(name) !== index) problems.push({ path: `${path}/${index}`, message: `${String(name)} is named twice` });
  });
  return problems;
}

function entryProblems(entry: unknown, files: ReadonlySet<string>): BundleProblem[] {
  const path = `${MANIFEST_FILE}#/entry`;
  if (!Array.isArray(entry) || entry.length === 0 || entry.length > 32)
    return [{ path, message: 'must be an array of 1-32 strings: the program, then its arguments' }];
  const problems: BundleProblem[] = [];
  entry.forEach((part, index) => {
    if (typeof part !== 'string' || part.length === 0 || part.length > 1024 || /\u0000/.test(part)) {
      problems.push({ path: `${path}/${index}`, message: 'must be a non-empty string of at most 1024 characters' });
    }
  });
  const program = entry[0];
  if (
    typeof program === 'string' &&
    !(ENTRY_RUNTIMES as readonly string[]).includes(program) &&
    !program.startsWith('/') &&
    !files.has(program.replace(/^\.\//, ''))
  ) {
    problems.push({
      path: `${path}/0`,
      message: `${JSON.stringify(program)} is not a file of the bundle; use "node", "sh" or "python3" with a script of the bundle, a file of the bundle, or an absolute path`,
    });
  }
  return problems;
}

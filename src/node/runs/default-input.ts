// The input an agent's runs start from (register --input, docs/api.md "register"): stored with the registration,
// under what a run gives. The daemon's scheduled runs have nobody to ask, and a corpus, a repository or a leads file
// rarely changes between runs while the question or the revision does.
import { SvcError } from '../../contract/errors.js';
import type { ServiceClient } from '../service/service-client.js';

export type Input = Record<string, unknown>;

/** A run's input: the stored default's fields, then the run's own over them (a shallow merge, like --input pairs). */
export function withDefaultInput(defaults: Input | undefined, given: Input | undefined): Input | undefined {
  if (defaults === undefined) return given;
  return { ...defaults, ...given };
}

/**
 * Refuses a default the agent would refuse, before anything is stored: checked against the input_schema of the
 * bundle runs use when no upload of the user's is current (the built-in agent). When one is, the service checks
 * each run against that upload's schema anyway, before the charge, and the node does not hold it: nothing here.
 */
export async function checkDefaultInput(
  deps: { client: ServiceClient; token: string; localSchema: Input | undefined },
  agentId: string,
  input: Input,
): Promise<void> {
  if (deps.localSchema === undefined || (await uploadIsCurrent(deps.client, deps.token, agentId))) return;
  // A default may be partial: what every run shares (a corpus), its required fields left to each run (a question).
  const problems = await partialInputProblems(deps.localSchema, input);
  if (problems.length === 0) return;
  const first = problems[0]!;
  throw new SvcError('input_invalid', `${first.path}: ${first.message} (the input_schema of ${agentId}); nothing was stored`, {
    remedy: `See the inputs ${agentId} takes: swarm-node docs starter-agents.`,
    extensions: { errors: problems, agent_id: agentId },
  });
}

/**
 * Where the fields `input` gives fail the agent's schema, as its runs would be refused (`/input/repo`: "must match
 * ^/"), leaving out what it does not give: a default, or a wizard's answers one at a time, may be partial. Every field
 * it gives must be one the schema takes, as the schema says. The schema is this node's own bundle's (the package's,
 * or the operator's), not an upload: checked without the deadline uploads get.
 */
export async function partialInputProblems(schema: Input, input: Input): Promise<{ path: string; message: string }[]> {
  const { required: _required, minProperties: _minProperties, ...partial } = schema;
  // Ajv is loaded only here: runs import this file for withDefaultInput and never check a schema.
  const { runInputProblems } = await import('../../contract/input-schema.js');
  return runInputProblems(partial, input, { trusted: true });
}

async function uploadIsCurrent(client: ServiceClient, token: string, agentId: string): Promise<boolean> {
  // Loaded here only: the upload module packs archives, and runs (which import this file) never need it.
  const { agentVersions } = await import('../agents/upload.js');
  try {
    return (await agentVersions(client, token, agentId)).current !== null;
  } catch (error) {
    // A tier without agent upload has no uploads: its runs use the built-in agent.
    if (error instanceof SvcError && error.code === 'forbidden') return false;
    throw error;
  }
}

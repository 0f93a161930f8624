// Which code a run executes (docs/api.md "Agent upload", "Input checked before the charge"): the user's current
// upload of the agent, pinned to the run by digest when the run is accepted, so a rollback or a new upload while it
// waits changes nothing about it; no upload, the node's built-in agent. The input is checked against that bundle's
// input_schema first (the upload's, or the built-in agent's): an input the agent would refuse is refused here,
// before anything is charged.
import { SvcError } from '../../contract/errors.js';
import { runInputProblems } from '../../contract/input-schema.js';
import type { AgentVersions } from './agent-versions.js';
import { builtInSchema } from './builtin-schemas.js';

/** The digest the run is pinned to (null: built-in); 422 input_invalid, naming each failing field, otherwise. */
export async function pinBundle(versions: AgentVersions, userId: string, agentId: string, input: unknown): Promise<string | null> {
  const current = await versions.current(userId, agentId);
  if (current === undefined) {
    const builtIn = builtInSchema(agentId);
    if (builtIn !== undefined) assertInput(builtIn.input_schema, input, agentId, `the built-in ${agentId} version ${builtIn.version}`, { version: builtIn.version, digest: null });
    return null;
  }
  const schema = JSON.parse(current.input_schema_json) as Record<string, unknown>;
  assertInput(schema, input, agentId, `your ${agentId} version ${current.version}`, { version: current.version, digest: current.digest });
  return current.digest;
}

function assertInput(schema: Record<string, unknown>, input: unknown, agentId: string, whose: string, which: { version: string; digest: string | null }): void {
  const problems = runInputProblems(schema, input);
  if (problems.length === 0) return;
  const first = problems[0]!;
  throw new SvcError('input_invalid', `${first.path}: ${first.message} (the input_schema of ${whose}); nothing was charged`, {
    extensions: { errors: problems, agent_id: agentId, ...which },
  });
}

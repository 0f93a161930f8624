// swarm-node agents show <agent_id>: one agent as your run would execute it (docs/api.md "Agents"): its price, the
// version (your current upload, else the built-in agent), each input its input_schema takes, and a run command to
// start from, so a run does not have to fail on its input to learn what the agent wants.
import { Command } from 'commander';
import type { ChalkInstance } from 'chalk';
import { formatDollars } from '../../contract/money.js';
import type { AgentDetailResponse } from '../../contract/schemas.js';
import { usableStoredJwt } from '../../node/identity/credentials.js';
import { exampleInput, inputFieldsOf } from '../../node/runs/agent-inputs.js';
import { contextFor } from '../context.js';
import { quoted } from '../invocation.js';
import { table } from '../table.js';

export function agentsShowCommand(): Command {
  return new Command('show')
    .description('one agent: its price, version, the input it takes (its input_schema) and a run to start from')
    .argument('<agent_id>', 'an agent of the catalog (swarm-node agents), or one of your own')
    .addHelpText(
      'after',
      `
Signed in, an agent you uploaded a version of shows that version's schema: the one your runs' input is checked
against. Offline, a catalog agent shows this node's own bundle of it. Exits 5 when there is no such agent.

Example:
  $ swarm-node agents show agent_research_rag_015
  $ swarm-node agents show agent_dev_review_012 --json | jq .input_schema`,
    )
    .action(async (agentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { showAgent } = await import('../../node/service/catalog.js');
      const bearer = usableStoredJwt(ctx.paths.credentialsFile, ctx.clock.now())?.token;
      const { agent, unreachable } = await showAgent(await ctx.client(), agentId, bearer, ctx.paths.home);
      if (unreachable !== undefined) ctx.output.warn(`${unreachable.message}; showing this node's own bundle of ${agentId}`);
      const example = exampleInput(agent.input_schema);
      // The example acts on this node and service when typed, as a "Next:" line does (invocation.ts).
      const run = ctx.output.commands(runCommand(agent.agent_id, example));
      ctx.output.result({ ...agent, example_input: example }, (shown, style) => render(shown, run, style));
    });
}

function render(agent: AgentDetailResponse, run: string, style: ChalkInstance): string {
  const from = agent.source === 'upload' ? `your upload, digest ${agent.digest!.slice(0, 12)}` : 'the built-in agent';
  const lines = [
    `${style.bold(agent.agent_id)}  ${agent.name}`,
    `${formatDollars(agent.price_cents)} a run · version ${agent.version} (${from})`,
    '',
  ];
  const fields = inputFieldsOf(agent.input_schema);
  if (fields.length === 0) lines.push('Input: none.');
  else {
    lines.push('Input (the whole schema: --json):');
    const rows = fields.map((field) => [`  ${field.name}`, field.kind, field.description]);
    lines.push(
      table(
        ['  NAME', 'TAKES', 'WHAT IT IS'].map((h) => style.bold(h)),
        rows,
      ),
    );
    const least = agent.input_schema.minProperties;
    if (typeof least === 'number' && least > 0) lines.push(`  It needs at least ${least} of these.`);
  }
  lines.push('', 'Example:', `  ${run}`);
  return lines.join('\n');
}

/** `swarm-node run ID --input k=v …` for text, numbers and booleans; an object or a list needs --input-file. */
function runCommand(agentId: string, example: Record<string, unknown>): string {
  const values = Object.entries(example);
  if (values.some(([, value]) => typeof value === 'object' && value !== null)) {
    return `swarm-node run ${agentId} --input-file input.json  (input.json: ${JSON.stringify(example)})`;
  }
  return [`swarm-node run ${agentId}`, ...values.map(([name, value]) => `--input ${quoted(`${name}=${String(value)}`)}`)].join(' ');
}

// swarm-node agents: the SKU catalog with names and prices, from the service; the built-in catalog offline.
import { Command } from 'commander';
import { AGENT_SKUS, type AgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';

export function agentsCommand(): Command {
  return new Command('agents')
    .description('list the agents you can run, with their price per run')
    .addHelpText('after', '\nExample:\n  $ swarm-node agents\n  $ swarm-node agents --json | jq -r \'.agents[].agent_id\'')
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      let agents: readonly AgentSku[];
      let source: 'service' | 'built-in';
      try {
        agents = await (await ctx.client()).agents();
        source = 'service';
      } catch (error) {
        if (!(error instanceof SvcError) || error.code !== 'service_unreachable') throw error;
        ctx.output.warn(`${error.message}; showing the built-in catalog`);
        agents = AGENT_SKUS;
        source = 'built-in';
      }
      ctx.output.result({ source, agents }, ({ agents: list }, style) =>
        list.map((agent) => `${agent.agent_id.padEnd(26)} ${formatDollars(agent.price_cents).padStart(6)}  ${style.dim(agent.name)}`).join('\n'),
      );
    });
}

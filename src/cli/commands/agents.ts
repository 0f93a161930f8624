// swarm-node agents: the SKU catalog with names and prices, from the service (with your own agents when signed in);
// the built-in catalog offline.
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { usableStoredJwt } from '../../node/identity/credentials.js';
import { contextFor } from '../context.js';
import { agentsShowCommand } from './agents-show.js';

export function agentsCommand(): Command {
  return new Command('agents')
    .description('list the agents you can run, with their price per run (your own agents too, when signed in)')
    .addCommand(agentsShowCommand())
    .addHelpText(
      'after',
      "\nswarm-node agents show AGENT_ID prints one agent's input and a run to start from.\n\nExample:\n  $ swarm-node agents\n  $ swarm-node agents show agent_research_rag_015\n  $ swarm-node agents --json | jq -r '.agents[].agent_id'",
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { agentCatalog } = await import('../../node/service/catalog.js');
      // Signed in (a JWT that has not expired), the service adds the agents of your own; otherwise the catalog alone.
      const bearer = usableStoredJwt(ctx.paths.credentialsFile, ctx.clock.now())?.token;
      const { source, agents, unreachable } = await agentCatalog(await ctx.client(), bearer);
      if (unreachable !== undefined) ctx.output.warn(`${unreachable.message}; showing the built-in catalog`);
      ctx.output.result({ source, agents }, ({ agents: list }, style) =>
        list
          .map((agent) => `${agent.agent_id.padEnd(26)} ${formatDollars(agent.price_cents).padStart(6)}  ${style.dim(agent.name)}`)
          .join('\n'),
      );
    });
}

// swarm-node unregister: remove an agent from this node (its run history stays).
import { Command } from 'commander';
import { contextFor } from '../context.js';

export function unregisterCommand(): Command {
  return new Command('unregister')
    .description('remove an agent from this node; its run history is kept')
    .argument('<agent_id>', 'a registered agent (swarm-node list)')
    .addHelpText('after', '\nExample:\n  $ swarm-node unregister agent_ops_monitor_004')
    .action(async (agentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { unregisterAgent } = await import('../../node/registrations.js');
      const result = unregisterAgent(await ctx.store(), agentId);
      ctx.output.result(result, (r) => `Unregistered ${r.agent_id}.`);
    });
}

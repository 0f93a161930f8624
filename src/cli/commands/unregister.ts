// swarm-node unregister: remove an agent from this node (its run history stays).
import { Command } from 'commander';
import { contextFor } from '../context.js';

export function unregisterCommand(): Command {
  return new Command('unregister')
    .description('remove an agent from this node, which no longer serves it; its run history is kept')
    .argument('<agent_id>', 'a registered agent (swarm-node list)')
    .addHelpText(
      'after',
      `
The service stops sending runs of the agent to this node, and its schedule there (register --every) is removed.
When it cannot be told now, the registration is removed all the same and the daemon tells the service at its next
contact; a schedule it could not remove is named, with the command that removes it.

Example:
  $ swarm-node unregister agent_ops_monitor_004`,
    )
    .action(async (agentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { unregisterAgent } = await import('../../node/agents/registrations.js');
      const result = await unregisterAgent(await ctx.store(), await ctx.thisNode(), agentId, {
        client: await ctx.client(),
        token: () => ctx.requireJwt().token,
      });
      ctx.output.result(
        result,
        (r) =>
          `Unregistered ${r.agent_id}${r.withdrawn ? '; the service no longer sends its runs here' : ''}${r.schedule?.removed === true ? `; its schedule ${r.schedule.schedule_id} is removed` : ''}.`,
      );
      if (!result.withdrawn && result.withdraw_error !== undefined) {
        ctx.output.warn(`the service was not told (${result.withdraw_error}); the daemon withdraws it at its next contact`);
      }
      if (result.schedule !== undefined && !result.schedule.removed) {
        ctx.output.warn(
          `its schedule ${result.schedule.schedule_id} at the service was not removed (${result.schedule.error}); it runs nothing here, but skips each occurrence. ${result.schedule.remedy}`,
        );
      }
    });
}

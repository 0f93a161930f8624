// swarm-node run: one billed run of an agent, journaled before the call so a lost answer is never charged twice.
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';

export function runCommand(): Command {
  return new Command('run')
    .description('run an agent once; it is charged its per-run price from your wallet')
    .argument('<agent_id>', 'an agent from the catalog (swarm-node agents)')
    .addHelpText(
      'after',
      `
Exits 3 on insufficient balance (the error carries wallet_login_url), 6 when the service cannot be reached;
a run whose answer was lost stays pending and is settled, never charged twice, by the next run.

Example:
  $ swarm-node run agent_ops_monitor_004
  $ swarm-node run agent_ops_monitor_004 --json | jq .balance_cents`,
    )
    .action(async (agentId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const [{ runAgent, settlePendingRuns }, { succeededOrThrow }] = await Promise.all([import('../../node/run-agent.js'), import('../../node/run-errors.js')]);
      const deps = { db: await ctx.store(), client: await ctx.client(), clock: ctx.clock, jwt, source: 'cli' as const };
      const earlier = await settlePendingRuns(deps);
      if (earlier.settled > 0) ctx.output.info(`Settled ${earlier.settled} earlier run(s) whose answer had been lost (same key, not charged twice).`);
      if (earlier.expired > 0) ctx.output.warn(`${earlier.expired} earlier run(s) stayed unanswered past the 24 h key lifetime; marked failed (outcome_unknown).`);
      const result = await ctx.output.spin(`Running ${agentId}`, async () => succeededOrThrow(await runAgent(deps, agentId)));
      ctx.output.result(result, (r, style) => {
        const head = `${style.green('✓')} ${r.agent_id} run ${r.run_id}: charged ${formatDollars(r.charged_cents)}, balance ${formatDollars(r.balance_cents)}`;
        return `${head}\n${JSON.stringify(r.output, null, 2)}`;
      });
    });
}

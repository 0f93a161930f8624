// swarm-node cancel RUN_ID: stops a run (docs/api.md "Cancel"). A queued run ends cancelled at once; a running one is
// stopped by its node at its next contact, within seconds. A cancelled run is refunded whole.
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';

export function cancelCommand(): Command {
  return new Command('cancel')
    .description('cancel a queued or running run; it is refunded')
    .argument('<run_id>', 'a run id (swarm-node runs lists them)')
    .addHelpText(
      'after',
      `
A run that already ended cannot be cancelled (exit 1, run_finished); a result its node sent before it learned of
the cancel stands, and is charged. Exits 5 when you have no such run, 4 when not signed in.

Example:
  $ swarm-node cancel 01a218c2-3c74-74bd-abe3-e4b2f0c1d9a7
  $ swarm-node cancel 01a218c2-3c74-74bd-abe3-e4b2f0c1d9a7 --json | jq .stopping`,
    )
    .action(async (runId: string, _options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const jwt = ctx.requireJwt();
      const { RunsApi } = await import('../../node/service/runs-api.js');
      const cancelled = await new RunsApi(await ctx.client()).cancel(jwt.token, runId);
      ctx.output.result(cancelled, ({ run, stopping }, style) =>
        stopping
          ? `${style.yellow('…')} run ${run.run_id} of ${run.agent_id} is being stopped on node ${run.node_id ?? '-'}; it ends cancelled and refunded (${formatDollars(run.balance_cents)} in the wallet until then). Watch: swarm-node runs show ${run.run_id}`
          : `${style.green('✓')} run ${run.run_id} of ${run.agent_id} cancelled; refunded, the wallet holds ${formatDollars(run.balance_cents)}`,
      );
    });
}

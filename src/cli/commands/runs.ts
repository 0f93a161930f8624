// swarm-node runs: the local run journal, newest first, with totals.
import { Command } from 'commander';
import { countParser } from '../count-option.js';
import { formatDollars } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { shortTime, table } from '../table.js';

const MAX_LIMIT = 10_000;


export function runsCommand(): Command {
  return new Command('runs')
    .description('show the run history of this node, with totals')
    .option('--agent <agent_id>', 'only this agent')
    .option('--limit <n>', 'show at most n runs (totals count them all)', countParser(1, MAX_LIMIT), 20)
    .addHelpText('after', '\nExits 5 when --agent names no agent of the catalog (swarm-node agents).\n\nExample:\n  $ swarm-node runs --agent agent_ops_monitor_004 --limit 5\n  $ swarm-node runs --json | jq .totals.charged_cents')
    .action(async (options: { agent?: string; limit: number }, command: Command) => {
      const ctx = contextFor(command);
      const { runsOf } = await import('../../node/runs/run-history.js');
      const history = runsOf(await ctx.store(), { ...(options.agent === undefined ? {} : { agentId: options.agent }), limit: options.limit });
      ctx.output.result(history, ({ runs, totals }, style) => {
        if (runs.length === 0) return '';
        const statusColour = (status: string): string =>
          status === 'succeeded' ? style.green(status) : status === 'pending' ? style.yellow(status) : style.red(status);
        const rows = table(
          ['STARTED', 'AGENT', 'STATUS', 'CHARGED', 'RUN ID'].map((h) => style.bold(h)),
          runs.map((r) => [shortTime(r.started_at), r.agent_id, statusColour(r.status), formatDollars(r.charged_cents), r.run_id ?? '-']),
          ['left', 'left', 'left', 'right'],
        );
        const counts = Object.entries(totals.by_status)
          .filter(([, count]) => count > 0)
          .map(([status, count]) => `${count} ${status}`)
          .join(', ');
        return `${rows}\n\n${runs.length} of ${totals.runs} run(s) shown; in total ${formatDollars(totals.charged_cents)} charged (${counts}).`;
      });
      if (history.runs.length === 0) {
        ctx.output.next(
          options.agent === undefined
            ? 'No runs yet. Run an agent of the catalog (swarm-node agents), for example: swarm-node run agent_ops_monitor_004.'
            : `No runs of ${options.agent} yet. Run it: swarm-node run ${options.agent}.`,
        );
      }
    });
}

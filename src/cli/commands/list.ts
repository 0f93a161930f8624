// swarm-node list: the registered agents with schedule, cap, last run and today's spend (UTC day).
import { Command } from 'commander';
import { formatDollars } from '../../contract/money.js';
import { formatDuration } from '../../node/agents/duration.js';
import { contextFor } from '../context.js';
import { shortTime, table } from '../table.js';

export function listCommand(): Command {
  return new Command('list')
    .description('list the agents registered on this node')
    .addHelpText(
      'after',
      '\n"Spent today" counts charges since 00:00 UTC, the day the daily cap counts.\n\nExample:\n  $ swarm-node list\n  $ swarm-node list --json | jq -r \'.registrations[].agent_id\'',
    )
    .action(async (_options: unknown, command: Command) => {
      const ctx = contextFor(command);
      const { registrationList } = await import('../../node/agents/registrations.js');
      const list = registrationList(await ctx.store(), ctx.clock.now());
      ctx.output.result(list, ({ registrations: rows }, style) => {
        if (rows.length === 0) return '';
        return table(
          ['AGENT', 'EVERY', 'DAILY CAP', 'SPENT TODAY', 'LAST RUN', 'NEXT RUN'].map((h) => style.bold(h)),
          rows.map((r) => [
            r.agent_id,
            r.every_seconds === null ? 'manual' : formatDuration(r.every_seconds),
            r.daily_cap_cents === null ? '-' : formatDollars(r.daily_cap_cents),
            formatDollars(r.spent_today_cents),
            r.last_run_at === null ? '-' : `${shortTime(r.last_run_at)} ${r.last_run_status}`,
            r.paused_reason !== null ? `paused: ${r.paused_reason}` : r.next_run_at === null ? '-' : shortTime(r.next_run_at),
          ]),
          ['left', 'left', 'right', 'right'],
        );
      });
      if (list.registrations.length === 0)
        ctx.output.next(
          'No agents registered. Register one of the catalog (swarm-node agents), for example: swarm-node register agent_ops_monitor_004.',
        );
    });
}

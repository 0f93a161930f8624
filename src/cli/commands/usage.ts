// swarm-node usage: what your runs cost, by day, agent and node, from the service's ledger (docs/api.md "Usage"):
// every node's runs and those started with curl, refunds taken off. A table, and on a terminal a sparkline of what
// each day cost.
import { Command, InvalidArgumentError, Option } from 'commander';
import { formatDollars } from '../../contract/money.js';
import type { UsageFigures, UsageResponse } from '../../contract/usage.js';
import { SvcError } from '../../contract/errors.js';
import { DAY_MS, startOfUtcDay } from '../../lib/clock.js';
import { contextFor } from '../context.js';
import { countParser } from '../count-option.js';
import { sparkline } from '../sparkline.js';
import { table } from '../table.js';

interface UsageOptions {
  from?: string;
  to?: string;
  days?: number;
  by: 'day' | 'agent' | 'node';
}

function date(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)))
    throw new InvalidArgumentError('give a date as YYYY-MM-DD (UTC)');
  return value;
}

const money = (figures: UsageFigures): string[] => [
  String(figures.runs),
  formatDollars(figures.charged_cents),
  formatDollars(figures.refunded_cents),
  formatDollars(figures.net_cents),
];
const HEADER = ['RUNS', 'CHARGED', 'REFUNDED', 'PAID'];
const ALIGN = ['right', 'right', 'right', 'right'] as const;

export function usageCommand(): Command {
  return new Command('usage')
    .description("what your runs cost, by day, agent or node, from the service's ledger (every node, and curl's runs)")
    .option('--from <date>', 'the first UTC day, YYYY-MM-DD', date)
    .option('--to <date>', 'the last UTC day, YYYY-MM-DD (default today)', date)
    .option('--days <n>', 'the last n days up to --to (default 30)', countParser(1, 366))
    .addOption(new Option('--by <what>', 'one row per').choices(['day', 'agent', 'node']).default('agent'))
    .addHelpText(
      'after',
      `
A run's charge, and its refund if it failed, count on the UTC day it started; PAID is what the wallet paid. The
totals equal the ledger's to the cent. On a terminal a line of bars shows each day's PAID.

Example:
  $ swarm-node usage
  $ swarm-node usage --days 7 --by day
  $ swarm-node usage --from 2025-01-01 --to 2025-01-31 --by node --json`,
    )
    .action(async (options: UsageOptions, command: Command) => {
      const ctx = contextFor(command);
      if (options.from !== undefined && options.days !== undefined) throw new SvcError('usage', 'give --from or --days, not both');
      const to = options.to ?? new Date(ctx.clock.now()).toISOString().slice(0, 10);
      const from =
        options.from ??
        new Date(startOfUtcDay(Date.parse(`${to}T00:00:00Z`)) - ((options.days ?? 30) - 1) * DAY_MS).toISOString().slice(0, 10);
      const { usageOf } = await import('../../node/service/usage-api.js');
      const usage = await usageOf(await ctx.client(), ctx.requireJwt().token, { from, to });
      ctx.output.result(usage, (u) => renderUsage(u, options.by, Boolean(process.stdout.isTTY)));
    });
}

export function renderUsage(usage: UsageResponse, by: UsageOptions['by'], terminal: boolean): string {
  const { totals } = usage;
  const lines = [
    `${usage.from} to ${usage.to}: ${totals.runs} run${totals.runs === 1 ? '' : 's'}, ${formatDollars(totals.charged_cents)} charged, ${formatDollars(totals.refunded_cents)} refunded, ${formatDollars(totals.net_cents)} paid`,
  ];
  if (terminal) lines.push(`${sparkline(usage.days.map((day) => day.net_cents))}  per day`);
  if (totals.runs === 0) return lines.join('\n');
  const rows =
    by === 'day'
      ? usage.days.filter((day) => day.runs > 0).map((day) => [day.date, ...money(day)])
      : by === 'agent'
        ? usage.by_agent.map((agent) => [agent.agent_id, ...money(agent)])
        : usage.by_node.map((node) => [node.node_id ?? '(none: not picked up)', ...money(node)]);
  lines.push('', table([by.toUpperCase(), ...HEADER], rows, ['left', ...ALIGN]));
  return lines.join('\n');
}

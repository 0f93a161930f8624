// swarm-node budget list | set | rm: caps on what your runs spend, per UTC day or month, on all agents or one
// (docs/api.md "Budgets"). The service holds every run to them, however it was started: over a cap, execute is
// refused 402 budget_exceeded and nothing is charged; a daemon pauses that agent until the cap resets. Raising or
// removing a cap needs a sign-in within 15 minutes, renewed here in a terminal (step-up.ts); lowering one never does.
import { Command, InvalidArgumentError } from 'commander';
import type { Budget, BudgetPeriod } from '../../contract/budgets.js';
import { findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars, parseDollarsToCents } from '../../contract/money.js';
import { contextFor } from '../context.js';
import { withRecentSignIn } from '../step-up.js';
import { shortTime, table } from '../table.js';

interface SetOptions {
  daily?: number;
  monthly?: number;
  agent?: string;
}

function dollars(value: string): number {
  const cents = parseDollarsToCents(value);
  if (cents === undefined) throw new InvalidArgumentError('give dollars such as 5 or 12.50');
  return cents;
}

function agentOf(agent: string | undefined): string | undefined {
  if (agent !== undefined && findAgentSku(agent) === undefined)
    throw new SvcError('agent_not_found', `no agent ${JSON.stringify(agent)}`, { remedy: 'The catalog: swarm-node agents.' });
  return agent;
}

function periodsOf(options: { daily?: unknown; monthly?: unknown }): BudgetPeriod[] {
  const periods: BudgetPeriod[] = [
    ...(options.daily === undefined ? [] : (['day'] as const)),
    ...(options.monthly === undefined ? [] : (['month'] as const)),
  ];
  if (periods.length === 0) throw new SvcError('usage', 'name the period: --daily and/or --monthly');
  return periods;
}

const scopeOf = (budget: Pick<Budget, 'agent_id'>): string => budget.agent_id ?? 'all agents';

export function budgetCommand(): Command {
  const budget = new Command('budget')
    .description('caps on what your runs spend per UTC day or month, at the service: list, set, rm')
    .addHelpText(
      'after',
      `
A cap counts what the runs started in its day or month were charged, refunds taken off, whoever started them (this
node, another, curl). A run that would go over it is refused (402 budget_exceeded, exit 11) and charged nothing;
a daemon pauses the agent until the cap resets. register --daily-cap sets an agent's daily cap here too.

Raising or removing a cap needs a sign-in within the last 15 minutes: in a terminal a code is mailed and asked for;
elsewhere it exits 4 with the login that renews it. Lowering a cap, or setting a first one, never needs it.

Example:
  $ swarm-node budget set --daily 5 --monthly 50
  $ swarm-node budget set --daily 1.20 --agent agent_dev_review_012
  $ swarm-node budget list
  $ swarm-node budget rm --daily --agent agent_dev_review_012`,
    );

  budget.addCommand(
    new Command('list')
      .description('your caps, what is spent against each, and when each resets')
      .addHelpText('after', '\nExample:\n  $ swarm-node budget list')
      .action(async (_options: unknown, command: Command) => {
        const ctx = contextFor(command);
        const { listBudgets } = await import('../../node/service/budgets-api.js');
        const listed = await listBudgets(await ctx.client(), ctx.requireJwt().token);
        ctx.output.result(listed, (l) =>
          l.budgets.length === 0
            ? 'No caps: runs are limited by the balance only. Set one: swarm-node budget set --daily 5'
            : table(
                ['SCOPE', 'PERIOD', 'CAP', 'SPENT', 'RESETS'],
                l.budgets.map((b) => [
                  scopeOf(b),
                  b.period,
                  formatDollars(b.cap_cents),
                  formatDollars(b.spent_cents),
                  shortTime(b.resets_at),
                ]),
                ['left', 'left', 'right', 'right', 'left'],
              ),
        );
      }),
  );

  budget.addCommand(
    new Command('set')
      .description('set a cap in dollars, per day and/or per month, on all agents or one (--agent)')
      .option('--daily <dollars>', 'the most runs started in one UTC day may cost', dollars)
      .option('--monthly <dollars>', 'the most runs started in one UTC month may cost', dollars)
      .option('--agent <agent_id>', 'cap this agent only (default: all your agents together)')
      .addHelpText(
        'after',
        '\nExample:\n  $ swarm-node budget set --daily 5 --monthly 50\n  $ swarm-node budget set --daily 1.20 --agent agent_dev_review_012',
      )
      .action(async (options: SetOptions, command: Command) => {
        const ctx = contextFor(command);
        const agentId = agentOf(options.agent);
        const periods = periodsOf(options);
        const { setBudget } = await import('../../node/service/budgets-api.js');
        const client = await ctx.client();
        const set: Budget[] = [];
        for (const period of periods) {
          const cents = (period === 'day' ? options.daily : options.monthly)!;
          set.push(await withRecentSignIn(ctx, (token) => setBudget(client, token, agentId, period, cents)));
        }
        ctx.output.result({ budgets: set }, (r) =>
          r.budgets
            .map(
              (b) =>
                `${b.period === 'day' ? 'Daily' : 'Monthly'} cap on ${scopeOf(b)}: ${formatDollars(b.cap_cents)} (${formatDollars(b.spent_cents)} spent; resets ${shortTime(b.resets_at)}).`,
            )
            .join('\n'),
        );
      }),
  );

  budget.addCommand(
    new Command('rm')
      .description('remove a cap')
      .option('--daily', 'the daily cap')
      .option('--monthly', 'the monthly cap')
      .option('--agent <agent_id>', "the agent's cap (default: the one on all agents)")
      .addHelpText('after', '\nExample:\n  $ swarm-node budget rm --daily --agent agent_dev_review_012')
      .action(async (options: { daily?: boolean; monthly?: boolean; agent?: string }, command: Command) => {
        const ctx = contextFor(command);
        const agentId = agentOf(options.agent);
        const periods = periodsOf(options);
        const { removeBudget } = await import('../../node/service/budgets-api.js');
        const client = await ctx.client();
        const removed: { agent_id: string | null; period: BudgetPeriod; removed: boolean }[] = [];
        for (const period of periods) {
          const wasThere = await withRecentSignIn(ctx, (token) => removeBudget(client, token, agentId, period));
          removed.push({ agent_id: agentId ?? null, period, removed: wasThere });
        }
        ctx.output.result({ budgets: removed }, (r) =>
          r.budgets
            .map((b) => `${b.removed ? 'Removed' : 'There was no'} ${b.period === 'day' ? 'daily' : 'monthly'} cap on ${scopeOf(b)}.`)
            .join('\n'),
        );
      }),
  );
  return budget;
}

// The budgets at execute (docs/api.md "Budgets"), the long way (runs/start-run.ts; the one statement of
// runs/execute-statement.ts holds the same rule): in the transaction that debits, after the debit, a run whose price
// would take what is spent this period over any cap that applies is refused 402 budget_exceeded with the cap, what
// is spent and when it resets; the transaction rolls back, so nothing is charged and the key is not kept (a retry
// after the reset runs). The caps' rows are locked (PostgreSQL; SQLite's one writer serialises the executes already),
// so parallel runs never overspend a cap between them.
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { periodEnd, type BudgetPeriod } from '../../contract/budgets.js';
import { isoTime } from '../../lib/clock.js';
import { EVERY_AGENT, spentOf, type BudgetCap, type BudgetStore } from './budget-store.js';

export type BudgetCheck = (userId: string, agentId: string, priceCents: number, now: number) => Promise<void>;

export function createBudgetCheck(budgets: BudgetStore): BudgetCheck {
  return async (userId, agentId, priceCents, now) => {
    const caps = await budgets.capsFor(userId, agentId);
    const over = caps
      .map((cap) => ({ cap, spent: spentOf(cap, now) }))
      .filter(({ cap, spent: cents }) => cents + priceCents > Number(cap.cap_cents))
      // The one that resets last: the run can go only once every cap it is over has reset.
      .sort((a, b) => periodEnd(b.cap.period, now) - periodEnd(a.cap.period, now) || (a.cap.scope === EVERY_AGENT ? 1 : -1))[0];
    if (over !== undefined) throw budgetExceeded(over.cap, over.spent, priceCents, agentId, now);
  };
}

const PERIOD_WORD: Record<BudgetPeriod, string> = { day: 'daily', month: 'monthly' };

function budgetExceeded(cap: BudgetCap, spentCents: number, priceCents: number, agentId: string, now: number): SvcError {
  const resetsAt = isoTime(periodEnd(cap.period, now));
  const scope = cap.scope === EVERY_AGENT ? 'your' : `${agentId}'s`;
  return new SvcError(
    'budget_exceeded',
    `${scope} ${PERIOD_WORD[cap.period]} budget of ${formatDollars(cap.cap_cents)} would be exceeded: ${formatDollars(spentCents)} spent, a run costs ${formatDollars(priceCents)}; it resets at ${resetsAt}; nothing was charged`,
    {
      // The cap this run would fit under, as `budget set` takes it: dollars without the sign.
      remedy:
        `Wait until ${resetsAt}, or raise the cap so that this run fits: ` +
        (cap.period === 'day' ? 'swarm-node budget set --daily ' : 'swarm-node budget set --monthly ') +
        `${formatDollars(spentCents + priceCents).slice(1)}${cap.scope === EVERY_AGENT ? '' : ` --agent ${agentId}`}`,
      extensions: {
        agent_id: cap.scope === EVERY_AGENT ? null : cap.scope,
        period: cap.period,
        cap_cents: Number(cap.cap_cents),
        spent_cents: spentCents,
        price_cents: priceCents,
        resets_at: resetsAt,
      },
    },
  );
}

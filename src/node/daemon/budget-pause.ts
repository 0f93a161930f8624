// A run refused 402 budget_exceeded (docs/api.md "Budgets"): a cap the user set at the service is spent for this
// period, so the agent is paused until the cap resets (the refusal's resets_at), once, and logged once. Not the
// insufficient-balance path (balance-pause.ts): money is there, and re-checking the wallet would resume at once and
// be refused again, in a loop.
import type { AgentSku } from '../../contract/agents.js';
import { startOfNextUtcDay } from '../../lib/clock.js';
import { pauseAgent } from '../store/schedules.js';
import { numberOf, stringOf, type DaemonCore } from './core.js';

export function pauseForBudget(core: DaemonCore, sku: AgentSku, facts: Record<string, unknown>): void {
  const now = core.now();
  const resetsAt = Date.parse(stringOf(facts.resets_at) ?? '');
  // A refusal without a reset time (never from this service) waits for the next UTC day, a daily cap's reset.
  const until = Number.isFinite(resetsAt) && resetsAt > now ? resetsAt : startOfNextUtcDay(now);
  pauseAgent(core.db, sku.agent_id, 'budget', until);
  core.log.warn('agent_paused', {
    agent: sku.agent_id,
    reason: 'budget_exceeded',
    period: stringOf(facts.period),
    cap_cents: numberOf(facts.cap_cents),
    spent_cents: numberOf(facts.spent_cents),
    price_cents: sku.price_cents,
    until: new Date(until).toISOString(),
    remedy: 'raise the cap (swarm-node budget set), or wait; the daemon resumes by itself at the reset',
  });
}

// The user's budgets at the service (docs/api.md "Budgets"): a cap per day or month, on every agent or one.
import { ALL_AGENTS_SCOPE, type Budget, type BudgetPeriod, type BudgetsResponse } from '../../contract/budgets.js';
import type { ServiceClient } from './service-client.js';

const pathOf = (agentId: string | undefined, period: BudgetPeriod): string =>
  `/v1/swarm/budgets/${encodeURIComponent(agentId ?? ALL_AGENTS_SCOPE)}/${period}`;

export async function listBudgets(client: ServiceClient, token: string): Promise<BudgetsResponse> {
  return (await client.call<BudgetsResponse>({ method: 'GET', path: '/v1/swarm/budgets', bearer: token, retrySafe: true })).body;
}

export async function setBudget(
  client: ServiceClient,
  token: string,
  agentId: string | undefined,
  period: BudgetPeriod,
  capCents: number,
): Promise<Budget> {
  return (
    await client.call<Budget>({
      method: 'PUT',
      path: pathOf(agentId, period),
      body: { cap_cents: capCents },
      bearer: token,
      retrySafe: true,
    })
  ).body;
}

/** Removes the cap; false when there was none (a repeat, or never set). */
export async function removeBudget(
  client: ServiceClient,
  token: string,
  agentId: string | undefined,
  period: BudgetPeriod,
): Promise<boolean> {
  try {
    await client.call({ method: 'DELETE', path: pathOf(agentId, period), bearer: token, retrySafe: true });
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'not_found') return false;
    throw error;
  }
}

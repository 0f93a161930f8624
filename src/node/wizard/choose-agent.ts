// Wizard step b: the agent, from the service's catalog (spec §2 SKU table), the ones registered here marked.
import { isAgentId } from '../../contract/agents.js';
import type { CatalogAgent } from '../../contract/own-agents.js';
import { formatDollars } from '../../contract/money.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { agentNotFound } from '../service/catalog.js';
import { listRegistrations } from '../store/registrations.js';
import type { AgentChoice, WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export function agentChoices(catalog: readonly CatalogAgent[], db: SqliteDatabase): AgentChoice[] {
  const registered = new Set(listRegistrations(db).map((registration) => registration.agent_id));
  // The wizard's first run is of a catalog agent; one's own agents are registered and run by name.
  return catalog.flatMap((sku) =>
    isAgentId(sku.agent_id)
      ? [{ agent_id: sku.agent_id, name: sku.name, price_cents: sku.price_cents, registered: registered.has(sku.agent_id) }]
      : [],
  );
}

/** "Ops monitor agent  $0.04 per run  (registered)": how a choice reads in the list. */
export function describeChoice(choice: AgentChoice): string {
  return `${choice.name}  ${formatDollars(choice.price_cents)} per run${choice.registered ? '  (registered)' : ''}`;
}

export async function chooseAgent(
  deps: Pick<WizardStepDeps, 'client' | 'ui'>,
  db: SqliteDatabase,
  questions: WizardQuestions,
): Promise<AgentChoice> {
  const catalog = await deps.client.agents();
  const choices = agentChoices(catalog, db);
  // A returning user most likely wants an agent of theirs; a newcomer the cheapest first run.
  const suggested = choices.find((choice) => choice.registered) ?? [...choices].sort((a, b) => a.price_cents - b.price_cents)[0];
  const agentId = await questions.agent(choices, suggested?.agent_id);
  const chosen = choices.find((choice) => choice.agent_id === agentId);
  if (chosen === undefined) throw agentNotFound(agentId);
  deps.ui.info(`Agent: ${chosen.name} (${chosen.agent_id}), ${formatDollars(chosen.price_cents)} per run.`);
  return chosen;
}

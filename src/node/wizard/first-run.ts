// Wizard step d: one confirmed, billed run (spec §4 execute) through runAgent, which journals it with its
// Idempotency-Key right before the call: a run is in the journal only once it is actually being sent. On an enrolled
// node it runs on this host, daemon or not.
import { formatDollars } from '../../contract/money.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { inputFlagsOf } from '../runs/agent-inputs.js';
import { runAgent, type RunCaller, type RunResult } from '../runs/run-agent.js';
import { succeededOrThrow } from '../runs/run-errors.js';
import type { AgentChoice, WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export async function firstRun(
  deps: WizardStepDeps,
  db: SqliteDatabase,
  questions: WizardQuestions,
  caller: RunCaller,
  agent: AgentChoice,
  balanceCents: number,
  input: Record<string, unknown> | undefined,
): Promise<RunResult | null> {
  if (!(await questions.confirmRun(agent, balanceCents))) {
    deps.ui.info(`No run now; run it any time: swarm-node run ${agent.agent_id}${inputFlagsOf(input)}`);
    return null;
  }
  const result = await deps.ui.spin(`Running ${agent.agent_id}`, async () =>
    succeededOrThrow(await runAgent({ db, client: deps.client, clock: deps.clock, caller, source: 'wizard' }, agent.agent_id, input)),
  );
  deps.ui.success(
    `✓ ${agent.name} ran (run ${result.run_id}): charged ${formatDollars(result.charged_cents)}, the wallet now holds ${formatDollars(result.balance_cents)}.`,
  );
  deps.ui.info(`Result: ${describeOutput(result.output)}`);
  return result;
}

/** The agent's answer in a line: its summary when it gives one, else compact JSON cut to a screen line. */
export function describeOutput(output: unknown): string {
  if (typeof output === 'object' && output !== null && typeof (output as { summary?: unknown }).summary === 'string') {
    return (output as { summary: string }).summary;
  }
  const text = typeof output === 'string' ? output : (JSON.stringify(output) ?? 'null');
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

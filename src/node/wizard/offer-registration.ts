// Wizard step e: register the agent with a schedule and a daily cap. Every answer is in before anything is
// written, and the registration is one transaction (upsertRegistration): an interrupted wizard leaves none.
import { formatDollars } from '../../contract/money.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { StoredJwt } from '../identity/credentials.js';
import { formatDuration } from '../agents/duration.js';
import { registerAgent, type ThisNode } from '../agents/registrations.js';
import { getRegistration, type Registration } from '../store/registrations.js';
import type { AgentChoice, WizardQuestions } from './questions.js';
import type { WizardStepDeps } from './ui.js';

export interface WizardRegistration {
  created: boolean;
  /** Whether the wizard wrote it; false: it was registered already and stays as it was. */
  changed: boolean;
  agent_id: string;
  every: string | null;
  every_seconds: number | null;
  daily_cap_cents: number | null;
}

export async function offerRegistration(
  deps: WizardStepDeps,
  db: SqliteDatabase,
  questions: WizardQuestions,
  signedIn: { jwt: StoredJwt; node: ThisNode; withRecentSignIn?: <T>(call: (jwt: StoredJwt) => Promise<T>) => Promise<T> },
  agent: AgentChoice,
  asked: { input: Record<string, unknown> | undefined; inputSchema: (agentId: string) => Record<string, unknown> | undefined },
): Promise<WizardRegistration | null> {
  const current = getRegistration(db, agent.agent_id);
  const kept = (registration: Registration): WizardRegistration => {
    const result = describe(registration, { created: false, changed: false });
    deps.ui.info(`${agent.agent_id} stays registered as it was: ${describeRegistration(result)}.`);
    return result;
  };
  if (!(await questions.confirmRegister(agent, current))) {
    if (current !== undefined) return kept(current);
    deps.ui.info(`Not registered; later: swarm-node register ${agent.agent_id} --every 1h`);
    return null;
  }
  const every = await questions.every(agent, current);
  const dailyCap = await questions.dailyCap(agent, every, current);
  // The same values again change nothing, here or in its schedule at the service: left as it is, and said so.
  if (
    current !== undefined &&
    (every === undefined || every === current.every_seconds) &&
    (dailyCap === undefined || dailyCap === current.daily_cap_cents)
  ) {
    return kept(current);
  }
  const register = (jwt: StoredJwt) =>
    registerAgent(
      {
        db,
        client: deps.client,
        clock: deps.clock,
        jwt,
        node: signedIn.node,
        credentialsFile: deps.credentialsFile,
        localInputSchema: asked.inputSchema,
      },
      {
        agent_id: agent.agent_id,
        every_seconds: every,
        daily_cap_cents: dailyCap,
        // The input given for the first run is what a new registration's scheduled runs start from: nobody is there to
        // give one when the daemon runs it. An existing registration keeps its own.
        default_input: current === undefined && asked.input !== undefined && Object.keys(asked.input).length > 0 ? asked.input : undefined,
      },
    );
  // A raised daily cap needs a recent sign-in (docs/api.md "Budgets"): renewed by mail in a terminal, and the whole
  // registration again, since nothing of it was written before the cap was, as `register` does.
  const outcome = signedIn.withRecentSignIn === undefined ? await register(signedIn.jwt) : await signedIn.withRecentSignIn(register);
  const result = describe(outcome.registration, { created: outcome.created, changed: true });
  deps.ui.success(`${result.created ? 'Registered' : 'Updated'} ${agent.agent_id}: ${describeRegistration(result)}.`);
  return result;
}

function describe(registration: Registration, how: { created: boolean; changed: boolean }): WizardRegistration {
  return {
    ...how,
    agent_id: registration.agent_id,
    every: registration.every_seconds === null ? null : formatDuration(registration.every_seconds),
    every_seconds: registration.every_seconds,
    daily_cap_cents: registration.daily_cap_cents,
  };
}

export function describeRegistration(registration: Pick<WizardRegistration, 'every' | 'daily_cap_cents'>): string {
  const schedule = registration.every === null ? 'manual runs only' : `every ${registration.every}`;
  const cap = registration.daily_cap_cents === null ? 'no daily cap' : `daily cap ${formatDollars(registration.daily_cap_cents)}`;
  return `${schedule}, ${cap}`;
}

// The wizard's flow (spec §1.7): sign-in, this node, agent, balance, first run, registration. Each step is a function of its
// own; the questions come in as an argument (flags, then a person), so the flow reads the same attended or not.
import { SvcError } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { StoredJwt } from '../identity/credentials.js';
import type { ReadCode } from '../identity/session.js';
import { inputFlagsOf } from '../runs/agent-inputs.js';
import type { EnrolledHere } from '../identity/enroll.js';
import type { ThisNode } from '../agents/registrations.js';
import type { RunCaller, RunResult } from '../runs/run-agent.js';
import { chooseAgent } from './choose-agent.js';
import { firstRun } from './first-run.js';
import { offerRegistration, type WizardRegistration } from './offer-registration.js';
import type { WizardQuestions } from './questions.js';
import { ensureSignedIn } from './sign-in.js';
import { ensureThisNode, type WizardNode } from './this-node.js';
import type { WizardStepDeps } from './ui.js';
import { ensureFunds } from './wallet-check.js';

export interface WizardDeps extends WizardStepDeps {
  merchantId: string;
  /** Where the mailed sign-in code comes from (a prompt, --code-file, stdin). */
  readCode: ReadCode;
  /** A wrong code is asked for again while its challenge takes tries (a person at the prompt, not --code-file). */
  retypeWrongCode: boolean;
  /** The wizard as invoked, for `email`: the remedy of a sign-in that must start over (a new code). */
  wizardAgain: (email: string) => string;
  walletUrl: string;
  /** Opened after sign-in, so a wizard stopped before it has written nothing locally. */
  openStore: () => Promise<SqliteDatabase>;
  /** Enrolls this home as a node of the signed-in user (a bare host). */
  enroll: (jwt: StoredJwt) => Promise<EnrolledHere>;
  /** This enrolled node (after ensureThisNode). */
  thisNode: () => Promise<ThisNode>;
  /** Who asks for the first run: this node, which then runs it here. */
  runCaller: () => Promise<RunCaller>;
  /** The agent's input_schema from the bundle this node would run (undefined: no bundle here). */
  inputSchema: (agentId: string) => Record<string, unknown> | undefined;
  questions: WizardQuestions;
  flagEmail: string | undefined;
  /**
   * Calls `call` with the stored JWT and, where the service asks for a recent sign-in (a raised daily cap), renews
   * it by mail in a terminal and calls it again with the new one (src/cli/step-up.ts).
   */
  withRecentSignIn: <T>(call: (jwt: StoredJwt) => Promise<T>) => Promise<T>;
}

export interface WizardSummary {
  user_id: string;
  tier: string;
  signed_in_now: boolean;
  node: WizardNode;
  agent: { agent_id: string; name: string; price_cents: number };
  run: Pick<RunResult, 'run_id' | 'status' | 'charged_cents' | 'balance_cents' | 'output' | 'idempotency_key'> | null;
  balance_cents: number;
  registration: WizardRegistration | null;
  next_steps: string[];
}

/** A balance can drop between the check and the run (the daemon runs too): check again, a few times at most. */
const MAX_FUNDING_ROUNDS = 3;

export async function runWizard(deps: WizardDeps): Promise<WizardSummary> {
  const { jwt, signedIn, signed_in_now } = await ensureSignedIn(deps, deps.questions, deps.flagEmail);
  const node = await ensureThisNode(deps, deps.questions, jwt);
  const db = await deps.openStore();
  const agent = await chooseAgent(deps, db, deps.questions);
  // Asked before the money: a run without the inputs its agent needs is refused by the agent (and refunded).
  const input = await deps.questions.input(agent, deps.inputSchema(agent.agent_id));

  let run: RunResult | null = null;
  let balance = 0;
  for (let round = 1; ; round += 1) {
    balance = await ensureFunds(deps, deps.questions, jwt, agent);
    try {
      run = await firstRun(deps, db, deps.questions, await deps.runCaller(), agent, balance, input);
      break;
    } catch (error) {
      if (!(error instanceof SvcError) || error.code !== 'insufficient_balance' || round >= MAX_FUNDING_ROUNDS) throw error;
      deps.ui.warn(error.message);
    }
  }
  if (run !== null) balance = run.balance_cents;

  const registration = await offerRegistration(
    deps,
    db,
    deps.questions,
    { jwt, node: await deps.thisNode(), withRecentSignIn: deps.withRecentSignIn },
    agent,
    {
      input,
      inputSchema: deps.inputSchema,
    },
  );
  return {
    user_id: signedIn.sub,
    tier: signedIn.tier,
    signed_in_now,
    node,
    agent: { agent_id: agent.agent_id, name: agent.name, price_cents: agent.price_cents },
    run:
      run === null
        ? null
        : {
            run_id: run.run_id,
            status: run.status,
            charged_cents: run.charged_cents,
            balance_cents: run.balance_cents,
            output: run.output,
            idempotency_key: run.idempotency_key,
          },
    balance_cents: balance,
    registration,
    next_steps: nextSteps(agent.agent_id, run?.run_id ?? null, registration, input),
  };
}

function nextSteps(
  agentId: string,
  runId: string | null,
  registration: WizardRegistration | null,
  input: Record<string, unknown> | undefined,
): string[] {
  const steps: string[] = [];
  if (runId === null) steps.push(`swarm-node run ${agentId}${inputFlagsOf(input)}   run it once`);
  else steps.push(`swarm-node runs show ${runId}   what this run produced, what it cost, its logs and artifacts`);
  steps.push('swarm-node list   the agents registered here, their schedules and what they spent today');
  steps.push('swarm-node runs   your runs at the service: status, charge, node');
  if (registration !== null && registration.every !== null) {
    steps.push(
      `swarm-node status   whether the daemon (svc-swarm-node.service, or swarm-node daemon) is running: it runs ${agentId} every ${registration.every}`,
    );
  } else {
    steps.push(`swarm-node register ${agentId} --every 1h   let the daemon run it on a schedule`);
  }
  return steps;
}

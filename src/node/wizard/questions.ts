// The wizard's questions (spec §1.7). Every one has a flag: a flag answers first, a person is
// asked only when no flag did and there is a terminal, and without one the wizard names the flags to pass.
import type { AgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import type { TierId } from '../../contract/tiers.js';
import { inputFlag, missingInputs, typedInputValue, type InputField } from '../runs/agent-inputs.js';
import type { Registration } from '../store/registrations.js';

export interface AgentChoice extends AgentSku {
  /** Registered on this node already. */
  registered: boolean;
}

/** What a person is asked, with the wizard's suggestion as the default. src/cli/prompts.ts asks them in a terminal. */
export interface WizardPrompts {
  email(suggested: string | undefined): Promise<string>;
  agent(choices: readonly AgentChoice[], suggested: string | undefined): Promise<string>;
  /**
   * A value for one input the agent cannot run without; `check` says, at once, why a value would be refused (the
   * agent's schema for that field), or undefined when it would not.
   */
  input(agent: AgentChoice, field: InputField, check: (text: string) => Promise<string | undefined>): Promise<string>;
  /** Enroll this host as one of the user's nodes, so its first run runs here. */
  confirmEnroll(email: string): Promise<boolean>;
  /** true: wait here while the wallet is funded; false: quit. */
  waitForFunds(shortfall: Shortfall): Promise<boolean>;
  confirmRun(agent: AgentChoice, balanceCents: number): Promise<boolean>;
  confirmRegister(agent: AgentChoice, current: Registration | undefined): Promise<boolean>;
  /** Seconds between scheduled runs; null: manual runs only. */
  every(agent: AgentChoice, suggestedSeconds: number | null): Promise<number | null>;
  /** Cents per UTC day; null: no cap. */
  dailyCap(agent: AgentChoice, everySeconds: number | null, suggestedCents: number | null): Promise<number | null>;
}

export interface Shortfall {
  balance_cents: number;
  price_cents: number;
  wallet_login_url: string;
}

/** The answers given as flags; undefined: not given. */
export interface WizardFlags {
  email?: string;
  offer?: TierId;
  /** --code-file: where the mailed sign-in code is read from (unattended). */
  codeFile?: string;
  agent?: string;
  /** --input key=value pairs: the agent's input, as given (typed by the agent's schema once it is known). */
  input?: Record<string, string>;
  /** --enroll: enroll a bare host without asking (also --yes). */
  enroll?: boolean;
  /** --every: seconds, or null for `none`. */
  every?: number | null;
  /** --daily-cap: cents, or null for `none`. */
  dailyCap?: number | null;
  yes?: boolean;
  /** false for --no-register. */
  register?: boolean;
}

/** The flag that answers each question, as --help spells it. */
export const FLAG_OF = {
  email: '--email <email>',
  codeFile: '--code-file <file>',
  agent: '--agent <agent_id>',
  enroll: '--enroll',
  yes: '--yes',
} as const;

/**
 * The flags an unattended wizard needs, worked out from the flags, the local credentials and the agent's manifest
 * only, so it can fail before any network call or write. The run's confirmation needs --yes; --yes also answers
 * the registration, so nothing else can be missing. `inputSchema`: the --agent's input_schema, when it has a bundle.
 */
export function missingFlags(flags: WizardFlags, needsSignIn: boolean, inputSchema?: Record<string, unknown>): string[] {
  const missing: string[] = [];
  if (needsSignIn && flags.email === undefined) missing.push(FLAG_OF.email);
  if (needsSignIn && flags.codeFile === undefined) missing.push(FLAG_OF.codeFile);
  if (flags.agent === undefined) missing.push(FLAG_OF.agent);
  if (inputSchema !== undefined) missing.push(...missingInputs(inputSchema, Object.keys(flags.input ?? {})).map(inputFlag));
  if (flags.yes !== true) missing.push(FLAG_OF.yes);
  return missing;
}

export function notATerminal(missing: readonly string[], why: string): SvcError {
  // `--agent <agent_id>` → `--agent`; `--input repo=<value>` → `--input repo`.
  const names = missing.map((flag) => flag.replace(/(=| )<[^>]*>$/, ''));
  return new SvcError('not_a_terminal', `${why}: pass ${missing.join(', ')}`, {
    remedy:
      'Example: swarm-node wizard --agent agent_ops_monitor_004 --yes (sign in first with swarm-node login, or add --email and --code-file when this node is not signed in).',
    extensions: { missing_flags: names },
  });
}

/**
 * The questions as the flow asks them: every/dailyCap may answer undefined, "keep what the registration has"; input
 * is the agent's whole input (the --input pairs, then a person's answer for each input missing), undefined if none.
 */
export interface WizardQuestions extends Omit<WizardPrompts, 'every' | 'dailyCap' | 'input'> {
  /** The offer to sign in for: the flag, or undefined to take one the address paid for. */
  offer(): Promise<TierId | undefined>;
  input(agent: AgentChoice, inputSchema: Record<string, unknown> | undefined): Promise<Record<string, unknown> | undefined>;
  every(agent: AgentChoice, current: Registration | undefined): Promise<number | null | undefined>;
  dailyCap(
    agent: AgentChoice,
    everySeconds: number | null | undefined,
    current: Registration | undefined,
  ): Promise<number | null | undefined>;
}

/** A first schedule the wizard suggests; a person can change it, and --yes never picks it on its own. */
export const SUGGESTED_EVERY_SECONDS = 3600;
export const SUGGESTED_DAILY_CAP_CENTS = 100;

/**
 * Flags first, then the person (when `prompts` is given). Decision for `--yes` without `--every`: the agent is
 * registered for manual runs only (an existing registration keeps its schedule and cap), because an unattended
 * wizard must never start spending on a schedule nobody asked for.
 */
export function answering(flags: WizardFlags, prompts: WizardPrompts | undefined): WizardQuestions {
  const unanswered = (flag: string): never => {
    throw notATerminal([flag], 'no terminal to ask on');
  };
  return {
    email: (suggested) =>
      flags.email !== undefined ? Promise.resolve(flags.email) : prompts ? prompts.email(suggested) : unanswered(FLAG_OF.email),
    offer: () => Promise.resolve(flags.offer),
    agent: (choices, suggested) =>
      flags.agent !== undefined ? Promise.resolve(flags.agent) : prompts ? prompts.agent(choices, suggested) : unanswered(FLAG_OF.agent),
    input: async (agent, schema) => {
      // The flags first, typed and checked at once: a value the agent refuses is said before any question.
      const input: Record<string, unknown> = typedInput(schema, flags.input ?? {});
      await refuseInputFlags(agent.agent_id, schema, input);
      const missing = schema === undefined ? [] : missingInputs(schema, Object.keys(input));
      if (missing.length > 0 && prompts === undefined) throw notATerminal(missing.map(inputFlag), 'no terminal to ask on');
      for (const field of missing) {
        const check = async (text: string) => (await fieldProblem(schema!, field.name, typedInputValue(schema, field.name, text)))?.message;
        input[field.name] = typedInputValue(schema, field.name, await prompts!.input(agent, field, check));
      }
      return Object.keys(input).length === 0 ? undefined : input;
    },
    confirmEnroll: (email) =>
      flags.enroll === true || flags.yes === true
        ? Promise.resolve(true)
        : prompts
          ? prompts.confirmEnroll(email)
          : unanswered(FLAG_OF.enroll),
    // Unattended, nobody can fund the wallet meanwhile: quit with the remedy at once.
    waitForFunds: (shortfall) => (prompts ? prompts.waitForFunds(shortfall) : Promise.resolve(false)),
    confirmRun: (agent, balance) =>
      flags.yes === true ? Promise.resolve(true) : prompts ? prompts.confirmRun(agent, balance) : unanswered(FLAG_OF.yes),
    confirmRegister: (agent, current) => {
      if (flags.register === false) return Promise.resolve(false);
      // Giving a schedule or a cap is asking for the registration.
      if (flags.yes === true || flags.every !== undefined || flags.dailyCap !== undefined) return Promise.resolve(true);
      return prompts ? prompts.confirmRegister(agent, current) : unanswered(FLAG_OF.yes);
    },
    every: (agent, current) => {
      if (flags.every !== undefined) return Promise.resolve(flags.every);
      if (flags.yes === true || !prompts) return Promise.resolve(current === undefined ? null : undefined);
      return prompts.every(agent, current === undefined ? SUGGESTED_EVERY_SECONDS : current.every_seconds);
    },
    dailyCap: (agent, every, current) => {
      if (flags.dailyCap !== undefined) return Promise.resolve(flags.dailyCap);
      if (flags.yes === true || !prompts) return Promise.resolve(current === undefined ? null : undefined);
      const everySeconds = every === undefined ? (current?.every_seconds ?? null) : every;
      return prompts.dailyCap(agent, everySeconds, current === undefined ? SUGGESTED_DAILY_CAP_CENTS : current.daily_cap_cents);
    },
  };
}

/** The --input pairs, each a number or a boolean where the agent's schema wants one (agent-inputs.ts). */
export function typedInput(schema: Record<string, unknown> | undefined, pairs: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(pairs).map(([name, text]) => [name, typedInputValue(schema, name, text)]));
}

/** Why the agent's schema refuses this one field's value ("repo must match ^/"); undefined when it takes it. */
async function fieldProblem(schema: Record<string, unknown>, name: string, value: unknown): Promise<{ message: string } | undefined> {
  const { partialInputProblems } = await import('../runs/default-input.js');
  const problem = (await partialInputProblems(schema, { [name]: value }))[0];
  return problem === undefined ? undefined : { message: `${name} ${problem.message}` };
}

/**
 * --input values the agent refuses, said at once (exit 2, before a question, a charge or a call), each field named
 * with what its schema says it is.
 */
export async function refuseInputFlags(
  agentId: string,
  schema: Record<string, unknown> | undefined,
  input: Record<string, unknown>,
): Promise<void> {
  if (schema === undefined) return;
  const properties = (typeof schema.properties === 'object' && schema.properties !== null ? schema.properties : {}) as Record<
    string,
    { description?: unknown }
  >;
  for (const [name, value] of Object.entries(input)) {
    const problem = await fieldProblem(schema, name, value);
    if (problem === undefined) continue;
    const description = typeof properties[name]?.description === 'string' ? ` (${properties[name].description as string})` : '';
    throw new SvcError('usage', `--input ${name}=${String(value)}: ${problem.message}${description}; nothing was asked, run or charged`, {
      remedy: `See the inputs ${agentId} takes: swarm-node docs starter-agents.`,
      extensions: { field: name },
    });
  }
}

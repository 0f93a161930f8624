// Every question swarm-node asks a person, in one module; each has a flag that answers it
// (src/node/wizard/questions.ts), so scripts never block. @inquirer/prompts loads on the first question only.
// Prompts draw on stderr, like every other line for people: stdout keeps the result alone.
// Ctrl+C at a prompt rejects with inquirer's ExitPromptError, which main.ts turns into exit 130.
import { AGENT_SKUS } from '../contract/agents.js';
import { formatDollars, parseDollarsToCents } from '../contract/money.js';
import { intervalCost, MIN_INTERVAL_SECONDS } from '../contract/schedule-terms.js';
import { isEmailAddress } from '../contract/email.js';
import { formatDuration, parseDuration } from '../node/agents/duration.js';
import { describeChoice } from '../node/wizard/choose-agent.js';
import { type AgentChoice, type Shortfall, type WizardPrompts } from '../node/wizard/questions.js';

type Inquirer = typeof import('@inquirer/prompts');

const NONE = new Set(['none', 'off', 'no']);

export function terminalPrompts(output: NodeJS.WritableStream = process.stderr): WizardPrompts {
  let loaded: Promise<Inquirer> | undefined;
  const inquirer = (): Promise<Inquirer> => (loaded ??= import('@inquirer/prompts'));
  const context = { output };

  return {
    async email(suggested) {
      const { input } = await inquirer();
      const answer = await input(
        {
          message: 'E-mail address you paid with:',
          ...(suggested === undefined ? {} : { default: suggested }),
          validate: (value) => isEmailAddress(value.trim()) || 'Enter the e-mail address you paid with, such as you@example.com.',
        },
        context,
      );
      return answer.trim();
    },

    async agent(choices, suggested) {
      const { select } = await inquirer();
      return select<string>(
        {
          message: 'Agent to run (billed per run from your wallet):',
          choices: choices.map((choice) => ({
            value: choice.agent_id,
            name: describeChoice(choice),
            description: choice.agent_id,
            short: choice.agent_id,
          })),
          ...(suggested === undefined ? {} : { default: suggested }),
          pageSize: Math.max(AGENT_SKUS.length, choices.length),
        },
        context,
      );
    },

    async input(agent, field, check) {
      const { input } = await inquirer();
      // The field's name, then the schema's own words for it; a value its schema refuses is said at once, naming it.
      const answer = await input(
        {
          message: field.description === field.name ? `${field.name}:` : `${field.name} (${field.description}):`,
          validate: async (value) => {
            if (value.trim() === '') return `${agent.agent_id} needs ${field.name} to run (unattended: --input ${field.name}=…).`;
            return (await check(value.trim())) ?? true;
          },
        },
        context,
      );
      return answer.trim();
    },

    async confirmEnroll(email) {
      const { confirm } = await inquirer();
      return confirm(
        { message: `Enroll this host as one of ${email}'s nodes? Its runs then run here (as swarm-node enroll does).`, default: true },
        context,
      );
    },

    async waitForFunds(shortfall: Shortfall) {
      const { select } = await inquirer();
      return select<boolean>(
        {
          message: `Fund at least ${formatDollars(shortfall.price_cents - shortfall.balance_cents)} more, then:`,
          choices: [
            { value: true, name: 'Wait here while I fund it (re-checks every 2 s)' },
            { value: false, name: 'Quit (run swarm-node wizard again once funded)' },
          ],
        },
        context,
      );
    },

    async confirmRun(agent: AgentChoice, balanceCents: number) {
      const { confirm } = await inquirer();
      return confirm(
        {
          message: `Run ${agent.agent_id} once now for ${formatDollars(agent.price_cents)} (the wallet holds ${formatDollars(balanceCents)})?`,
          default: true,
        },
        context,
      );
    },

    async confirmRegister(agent, current) {
      const { confirm } = await inquirer();
      const message =
        current === undefined
          ? `Register ${agent.agent_id} on this node, so the daemon can run it on a schedule?`
          : `${agent.agent_id} is registered; change its schedule or daily cap?`;
      // A new registration is the point of the offer; an existing one is changed only when asked for.
      return confirm({ message, default: current === undefined }, context);
    },

    async every(_agent, suggestedSeconds) {
      const { input } = await inquirer();
      const answer = await input(
        {
          message: 'Run it every (5m, 1h, 1d; none: manual runs only):',
          default: suggestedSeconds === null ? 'none' : formatDuration(suggestedSeconds),
          validate: (value) => durationError(value, suggestedSeconds) ?? true,
        },
        context,
      );
      return NONE.has(answer.trim().toLowerCase()) ? null : parseDuration(answer);
    },

    async dailyCap(agent, everySeconds, suggestedCents) {
      const { input } = await inquirer();
      const cost = everySeconds === null ? null : intervalCost(everySeconds, agent.price_cents, null);
      const perDay =
        cost === null
          ? ''
          : `; every ${formatDuration(everySeconds!)} costs up to ${formatDollars(cost.per_day_cents)} a day, ${formatDollars(cost.per_month_cents)} a month`;
      const answer = await input(
        {
          message: `Daily cap in dollars (none: no cap${perDay}):`,
          default: suggestedCents === null ? 'none' : formatDollars(suggestedCents).slice(1),
          validate: (value) => {
            if (NONE.has(value.trim().toLowerCase())) return true;
            const cents = parseDollarsToCents(value);
            if (cents === undefined) return 'Give dollars such as 1.00 or 0.50, or none.';
            // A cap below one run would hold the schedule every day (registrations.ts says the same to register).
            return (
              everySeconds === null ||
              cents >= agent.price_cents ||
              `A cap below one run (${formatDollars(agent.price_cents)}) lets none through: give at least that, or none.`
            );
          },
        },
        context,
      );
      return NONE.has(answer.trim().toLowerCase()) ? null : parseDollarsToCents(answer)!;
    },
  };
}

/** uninstall --purge: yes only when the person says so; the default is no. */
export async function confirmPurge(doomed: string[], output: NodeJS.WritableStream = process.stderr): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  const listed = doomed.length <= 1 ? doomed.join('') : `${doomed.slice(0, -1).join(', ')} and ${doomed.at(-1)}`;
  return confirm({ message: `Delete ${listed} for good? A later install then needs a new deploy token.`, default: false }, { output });
}

/** nodes remove: yes only when the person says so; the default is no. */
export async function confirmNodeRemoval(described: string, output: NodeJS.WritableStream = process.stderr): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  return confirm(
    {
      message: `Remove ${described} for good? Its credential stops working; the host needs a new enrollment to serve again.`,
      default: false,
    },
    { output },
  );
}

export async function confirmVersionRemoval(described: string, output: NodeJS.WritableStream = process.stderr): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts');
  return confirm({ message: `Remove ${described} for good? It cannot be made current again.`, default: false }, { output });
}

/** A schedule's interval: a minute or more (the service's rule), or the one it has now (kept as the daemon moved it). */
function durationError(value: string, current: number | null): string | undefined {
  if (NONE.has(value.trim().toLowerCase())) return undefined;
  let seconds: number;
  try {
    seconds = parseDuration(value);
  } catch (error) {
    return `${(error as Error).message}: write 5m, 1h or 1d (1m..7d), or none.`;
  }
  return seconds >= MIN_INTERVAL_SECONDS || seconds === current
    ? undefined
    : 'a schedule runs at most once a minute: write 1m or more, or none.';
}

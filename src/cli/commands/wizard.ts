// swarm-node wizard (spec §1.7): the guided first run. Sign-in when needed, an agent, the balance check, a first
// billed run, a registration. Every question has a flag; without a terminal (or under --json) the flags must
// answer them all, checked before anything is sent or written.
import { Command, InvalidArgumentError, Option } from 'commander';
import { AGENT_IDS, findAgentSku } from '../../contract/agents.js';
import { SvcError } from '../../contract/errors.js';
import { formatDollars } from '../../contract/money.js';
import { isEmailAddress } from '../../contract/email.js';
import { TIER_IDS, type TierId } from '../../contract/tiers.js';
import {
  answering,
  missingFlags,
  notATerminal,
  refuseInputFlags,
  typedInput,
  type WizardFlags,
  type WizardPrompts,
} from '../../node/wizard/questions.js';
import { contextFor, type CommandContext } from '../context.js';
import { collectInputPair } from '../input-options.js';
import { codeReader } from '../sign-in-code.js';
import { withRecentSignIn } from '../step-up.js';
import { cleared, parseDailyCap, parseEvery, type Cleared } from '../schedule-options.js';

interface WizardOptions {
  email?: string;
  offer?: TierId;
  tier?: TierId;
  codeFile?: string;
  agent?: string;
  input?: string[];
  every?: number | Cleared;
  dailyCap?: number | Cleared;
  yes?: boolean;
  enroll?: boolean;
  register: boolean;
}

/** Between two balance checks while the wallet is being funded (and two tries while a payment is confirmed). */
const POLL_INTERVAL_MS = 2_000;

function parseEmail(value: string): string {
  if (!isEmailAddress(value)) throw new InvalidArgumentError('give an e-mail address such as you@example.com');
  return value;
}

export function wizardCommand(): Command {
  return new Command('wizard')
    .description('the guided first run: sign in, choose an agent, check the wallet, run it once, register it')
    .option('--email <email>', 'the checkout e-mail (asked when this node must sign in)', parseEmail)
    .addOption(new Option('--offer <tier_id>', 'the offer to sign in for (default: one you paid for; alias: --tier)').choices(TIER_IDS))
    .addOption(new Option('--tier <tier_id>').choices(TIER_IDS).hideHelp())
    .option('--code-file <file>', 'read the sign-in code mailed to --email from this file (unattended; see swarm-node login --help)')
    .addOption(new Option('--agent <agent_id>', 'the agent to run').choices(AGENT_IDS))
    .option('--input <key=value>', "a field of the agent's input (repeat it); asked when the agent needs it", collectInputPair)
    .option('--every <duration>', 'register it on a schedule kept by the service: 1m..7d, e.g. 5m, 1h (none: manual runs only)', parseEvery)
    .option('--daily-cap <dollars>', 'register it with this daily cap in dollars (none: no cap)', parseDailyCap)
    .option('--enroll', 'enroll this host as one of your nodes without asking, when it is not one (its runs run here)')
    .option('-y, --yes', 'yes to the questions: enroll this host if need be, run it once now, and register it')
    .option('--no-register', 'do not register the agent')
    .addHelpText(
      'after',
      `
Asks only what the options did not answer. On a host that is not one of your nodes it asks before it enrolls it
(--enroll, or --yes, answers; no ends the wizard, nothing run). Without a terminal, or with --json, it asks
nothing: then --agent and --yes are needed (and --email with --code-file when the node is not signed in, and --input for each input the
agent needs, as its input_schema says), or it exits 2 naming the missing ones. Signing in mails a code to the
address: the wizard asks for it, or reads it from --code-file.
--yes without --every registers the agent for manual runs only: the wizard never starts a schedule on its own
(an agent registered earlier keeps its schedule and cap). When the wallet cannot pay one run, it shows the wallet
page and, in a terminal, waits for the funds (re-checking every 2 s); unattended, it exits 3.

Example:
  $ swarm-node wizard
  $ swarm-node wizard --agent agent_ops_monitor_004 --yes
  $ swarm-node wizard --agent agent_ops_monitor_004 --every 1h --daily-cap 1.00 --yes
  $ swarm-node wizard --agent agent_dev_review_012 --input repo=/srv/app --yes`,
    )
    .action(async (options: WizardOptions, command: Command) => {
      const ctx = contextFor(command);
      if (!options.register && (options.every !== undefined || options.dailyCap !== undefined)) {
        throw new SvcError('usage', '--no-register goes without --every and --daily-cap', {
          remedy: 'Drop --no-register to register the agent, or the schedule options.',
        });
      }
      // A cap that lets no run through is said before the first run is charged, not at the registration after it.
      const price = options.agent === undefined ? undefined : findAgentSku(options.agent)?.price_cents;
      if (price !== undefined && typeof options.every === 'number' && typeof options.dailyCap === 'number' && options.dailyCap < price) {
        throw new SvcError(
          'usage',
          `--daily-cap ${formatDollars(options.dailyCap).slice(1)} lets no run of ${options.agent} through (${formatDollars(price)} a run): its schedule would never run`,
          {
            remedy: 'Give a cap of one run or more, or --daily-cap none.',
          },
        );
      }
      const [{ needsSignInAnswers }, { runInput }] = await Promise.all([import('../../node/wizard/sign-in.js'), import('../run-input.js')]);
      // As given: typed by the agent's schema once the agent is known (agent-inputs.ts typedInputValue).
      const input = runInput({ ...(options.input === undefined ? {} : { input: options.input }) }) as Record<string, string> | undefined;
      const inputSchema = await inputSchemaReader(ctx);
      // A value the agent refuses (a relative path where it takes an absolute one) is said now, not after the questions.
      if (options.agent !== undefined && input !== undefined)
        await refuseInputFlags(options.agent, inputSchema(options.agent), typedInput(inputSchema(options.agent), input));
      const flags: WizardFlags = {
        ...(options.email === undefined ? {} : { email: options.email }),
        ...((options.offer ?? options.tier) === undefined ? {} : { offer: (options.offer ?? options.tier)! }),
        ...(options.codeFile === undefined ? {} : { codeFile: options.codeFile }),
        ...(options.agent === undefined ? {} : { agent: options.agent }),
        ...(input === undefined ? {} : { input }),
        ...(options.every === undefined ? {} : { every: cleared(options.every) as number | null }),
        ...(options.dailyCap === undefined ? {} : { dailyCap: cleared(options.dailyCap) as number | null }),
        ...(options.yes === true ? { yes: true } : {}),
        ...(options.enroll === true ? { enroll: true } : {}),
        ...(options.register ? {} : { register: false }),
      };

      let prompts: WizardPrompts | undefined;
      if (ctx.canPrompt()) {
        const { terminalPrompts } = await import('../prompts.js');
        prompts = terminalPrompts();
      } else {
        // Decided from local files only: nothing has been sent or written yet.
        const needsSignIn = needsSignInAnswers(ctx.paths.credentialsFile, ctx.clock.now(), flags.email);
        const missing = missingFlags(flags, needsSignIn, flags.agent === undefined ? undefined : inputSchema(flags.agent));
        if (missing.length > 0)
          throw notATerminal(missing, ctx.json ? '--json asks no questions' : 'no terminal to ask on (stdin is not a TTY)');
      }

      // Ctrl+C while a spinner waits (no prompt to catch it) ends the wait at once, and the program exits 130
      // through main.ts.
      await runAndReport(ctx, flags, prompts, inputSchema, ctx.interruption());
    });
}

type InputSchemaOf = (agentId: string) => Record<string, unknown> | undefined;

/** The input_schema of the bundle this node runs for an agent (the home's own, else the package's), read locally. */
async function inputSchemaReader(ctx: CommandContext): Promise<InputSchemaOf> {
  const { localInputSchema } = await import('../../node/runner/bundles.js');
  return (agentId) => localInputSchema(ctx.paths.home, agentId);
}

async function runAndReport(
  ctx: CommandContext,
  flags: WizardFlags,
  prompts: WizardPrompts | undefined,
  inputSchema: InputSchemaOf,
  interrupted: AbortSignal,
): Promise<void> {
  const { runWizard } = await import('../../node/wizard/run-wizard.js');
  const { describeRegistration } = await import('../../node/wizard/offer-registration.js');
  const config = ctx.config();
  const summary = await runWizard({
    client: await ctx.client(),
    clock: ctx.clock,
    credentialsFile: ctx.paths.credentialsFile,
    ui: ctx.output,
    pollIntervalMs: POLL_INTERVAL_MS,
    sleep: (ms) => sleepUnlessInterrupted(ms, interrupted),
    merchantId: config.merchant_id,
    readCode: codeReader(ctx, flags.codeFile),
    retypeWrongCode: prompts !== undefined && flags.codeFile === undefined,
    wizardAgain: (email) => wizardAgain(email, flags),
    walletUrl: config.wallet_url,
    openStore: () => ctx.store(),
    // A deploy token needs a recent sign-in: a token found stored from earlier is renewed by mail first.
    enroll: async () => {
      const { enrollHere } = await import('../../node/identity/enroll.js');
      return withRecentSignIn(ctx, async () =>
        enrollHere({ client: await ctx.client(), clock: ctx.clock, paths: ctx.paths }, { jwt: ctx.requireJwt() }),
      );
    },
    thisNode: () => ctx.requireNode(),
    runCaller: () => ctx.runCaller(),
    inputSchema,
    questions: answering(flags, prompts),
    flagEmail: flags.email,
    withRecentSignIn: (call) => withRecentSignIn(ctx, () => call(ctx.requireJwt())),
  });

  ctx.output.result(summary, (s, style) => {
    const lines = [style.bold('Done.')];
    lines.push(`  signed in   ${s.user_id} (${s.tier})`);
    lines.push(`  this node   ${s.node.node_id}${s.node.enrolled_now ? ' (enrolled now)' : ''}`);
    lines.push(`  agent       ${s.agent.agent_id} (${s.agent.name}, ${formatDollars(s.agent.price_cents)} per run)`);
    lines.push(`  first run   ${s.run === null ? 'not run' : `${s.run.run_id}, charged ${formatDollars(s.run.charged_cents)}`}`);
    lines.push(`  wallet      ${formatDollars(s.balance_cents)}`);
    lines.push(
      `  registered  ${s.registration === null ? 'no' : `${describeRegistration(s.registration)}${s.registration.changed ? '' : ' (as before)'}`}`,
    );
    lines.push('', 'Next:', ...s.next_steps.map((step) => `  ${step}`));
    return lines.join('\n');
  });
}

/**
 * The wizard as it was invoked, with the address it signs in with: what a sign-in that must start over runs (the
 * options that steer it kept, the ones that answer later questions left to ask again).
 */
function wizardAgain(email: string, flags: WizardFlags): string {
  const words = ['swarm-node wizard', '--email', email];
  if (flags.offer !== undefined) words.push('--offer', flags.offer);
  if (flags.agent !== undefined) words.push('--agent', flags.agent);
  if (flags.enroll === true) words.push('--enroll');
  return words.join(' ');
}

function sleepUnlessInterrupted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const interrupt = (): void => {
      clearTimeout(timer);
      reject(new SvcError('interrupted', 'interrupted while waiting'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', interrupt);
      resolve();
    }, ms);
    if (signal.aborted) interrupt();
    else signal.addEventListener('abort', interrupt, { once: true });
  });
}

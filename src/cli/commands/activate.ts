// swarm-node activate: turn a confirmed payment into a deploy token (spec §3, §4 paygate session + activate).
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEPLOY_TOKEN_LIFETIME_SECONDS } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { TIER_IDS } from '../../contract/tiers.js';
import { isEmailAddress } from '../../contract/email.js';
import { writeFileAtomic } from '../../node/host/files.js';
import { contextFor } from '../context.js';
import { inFlagTerms, type FlagTerms } from '../../lib/flag-terms.js';
import { keyValues } from '../table.js';
import { withRecentSignIn } from '../step-up.js';

interface ActivateOptions {
  tier?: string;
  offer?: string;
  email?: string;
  payment: string;
  session?: string;
  wait: number;
  deployTokenFile?: string;
}

export const DEFAULT_WAIT_SECONDS = 120;

/** The request bodies activate fills, in its flags (session create: tier_id, user_id; activate: session_id, payment_id). */
const ACTIVATE_TERMS: FlagTerms = {
  fields: { tier_id: '--tier', user_id: '--email', session_id: '--session', payment_id: '--payment' },
  remedies: {
    invalid_request: 'Correct the option named above and run the command again.',
  },
};
const MAX_WAIT_SECONDS = 3600;

export function parseWaitSeconds(value: string): number {
  const seconds = Number(value);
  if (!/^\d+$/.test(value) || seconds > MAX_WAIT_SECONDS)
    throw new InvalidArgumentError(`give whole seconds from 0 to ${MAX_WAIT_SECONDS}`);
  return seconds;
}

/**
 * spec §7's "repeat session creation with the same user_id as the checkout e-mail", as the command that does it: a
 * session is the signed-in user's own (its user_id, the JWT's subject), so a new one without --email works.
 */
function sessionOfYours(error: unknown, asked: { tier: string; payment: string; signedIn: string }): unknown {
  if (!(error instanceof SvcError) || error.code !== 'session_not_found') return error;
  return new SvcError(error.code, error.message, {
    remedy: `Run activate again with --email set to the checkout e-mail the payment was made with, the address you signed in with (${asked.signedIn}): swarm-node activate --tier ${asked.tier} --payment ${asked.payment}`,
    extensions: error.extensions,
    status: error.status,
  });
}

/** 13:05:09: the deadline of a wait of at most an hour, in the UTC the CLI's times are in. */
function clockTime(at: number): string {
  return new Date(at).toISOString().slice(11, 19);
}

/** Ctrl+C while activate waits for the payment's confirmation: the session and the payment stay, unused. */
function interruptedWait(sessionId: string, paymentId: string): SvcError {
  return new SvcError(
    'interrupted',
    `interrupted: stopped waiting for payment ${paymentId} to be confirmed; session ${sessionId} stays, nothing was activated`,
    {
      remedy: `Resume the wait (the same session and payment): swarm-node activate --session ${sessionId} --payment ${paymentId}`,
      extensions: { session_id: sessionId, payment_id: paymentId },
    },
  );
}

export function activateCommand(): Command {
  return (
    new Command('activate')
      .description('activate a paid session: get the deploy token that installs this node')
      .addOption(new Option('--tier <tier_id>', 'the tier paid for (alias: --offer)').choices(TIER_IDS))
      // login and wizard call the same value --offer: either name works here.
      .addOption(new Option('--offer <tier_id>').choices(TIER_IDS).hideHelp())
      .option('--email <email>', 'the checkout e-mail (becomes the session user_id; default: the signed-in user)')
      .requiredOption('--payment <payment_id>', 'the payment id from the payment provider (an identifier: it proves nothing)')
      .option('--session <session_id>', 'resume a session created earlier, instead of --tier and --email')
      .option('--wait <seconds>', 'how long to wait for the payment to be confirmed; 0 tries once', parseWaitSeconds, DEFAULT_WAIT_SECONDS)
      .option('--deploy-token-file <file>', 'write the deploy token to this file (mode 0600) instead of printing it')
      .addHelpText(
        'after',
        `
Needs a sign-in within the last 15 minutes as the user who paid (swarm-node login; in a terminal it asks for a
code by mail itself): the deploy token it mints enrols a node into that account. A session gives its deploy token
once; for another node, sign in and run swarm-node enroll (or install) there. Waits while the payment is not
confirmed yet (honouring the service's Retry-After), then exits 7.

Example:
  $ swarm-node login --email you@example.com
  $ swarm-node activate --tier svc_starter_agents --payment pay_123 --deploy-token-file /root/deploy-token
  $ sudo ./bin/swarm-node install --deploy-token-file /root/deploy-token`,
      )
      .action(async (options: ActivateOptions, command: Command) => {
        const ctx = contextFor(command);
        if (options.tier !== undefined && options.offer !== undefined && options.tier !== options.offer) {
          throw new SvcError('usage', `--tier ${options.tier} and --offer ${options.offer} name different tiers`, {
            remedy: '--offer is another name for --tier: give one of them.',
          });
        }
        const tier = options.tier ?? options.offer;
        if (options.session === undefined && tier === undefined) {
          throw new SvcError('usage', 'give --tier (a new session), or --session (one created earlier)', {
            remedy: 'Example: swarm-node activate --tier svc_starter_agents --payment pay_123',
          });
        }
        if (options.email !== undefined && !isEmailAddress(options.email))
          throw new SvcError('usage', `--email ${JSON.stringify(options.email)} is not an e-mail address`);
        const email = options.email ?? ctx.requireJwt().sub;
        const { activateNode } = await import('../../node/identity/activate.js');
        const client = await ctx.client();
        const input = {
          ...(options.session === undefined ? { tierId: tier!, email } : { sessionId: options.session }),
          paymentId: options.payment,
          waitSeconds: options.wait,
        };
        // Ctrl+C ends the wait, not the session: the person is told the session's id and the command that resumes it.
        let sessionId = options.session;
        ctx.onInterrupt(() => (sessionId === undefined ? undefined : interruptedWait(sessionId, options.payment)));
        const activation = await withRecentSignIn(ctx, (token) =>
          ctx.output.spin(
            `Activating with payment ${options.payment}${options.wait === 0 ? '' : `, waiting until ${clockTime(ctx.clock.now() + options.wait * 1000)} UTC for its confirmation`}`,
            (update) =>
              activateNode(
                {
                  client,
                  token,
                  clock: ctx.clock,
                  onSession: (id) => (sessionId = id),
                  onWait: (attempt, delayMs, deadline) => {
                    // Once, as a line (a log, a pipe, --json's stderr): the wait begins, its deadline and its session.
                    if (attempt === 1)
                      ctx.output.info(
                        `Payment ${options.payment} is not confirmed yet: waiting for it until ${clockTime(deadline)} UTC (session ${sessionId ?? '-'}).`,
                      );
                    update(
                      `Payment ${options.payment} not confirmed yet; retry ${attempt} in ${Math.ceil(delayMs / 1000)}s (waiting until ${clockTime(deadline)} UTC, --wait ${options.wait})`,
                    );
                  },
                },
                input,
              ).catch((error: unknown) => {
                throw inFlagTerms(
                  sessionOfYours(error, { tier: tier ?? ctx.requireJwt().tier, payment: options.payment, signedIn: ctx.requireJwt().sub }),
                  ACTIVATE_TERMS,
                );
              }),
          ),
        );

        const minutes = Math.round(DEPLOY_TOKEN_LIFETIME_SECONDS / 60);
        const { deploy_token, attempts: _attempts, ...details } = activation;
        let tokenFile: string | undefined;
        if (options.deployTokenFile !== undefined) {
          writeFileAtomic(options.deployTokenFile, `${deploy_token}\n`, 0o600);
          tokenFile = options.deployTokenFile;
        }
        // Without --deploy-token-file the token is on the screen: the next step names the file to put it in. Before
        // install, swarm-node is not on sudo's PATH: the step names this package's own program (program-word.ts).
        const install = ctx.output.commands(`sudo swarm-node install --deploy-token-file ${tokenFile ?? './deploy-token'}`);
        const result = {
          ...details,
          ...(tokenFile === undefined ? { deploy_token } : { deploy_token_file: tokenFile }),
          next_step: install,
        };
        const tokenLine: [string, string] = tokenFile === undefined ? ['deploy_token', deploy_token] : ['deploy_token_file', tokenFile];
        ctx.output.result(result, () =>
          keyValues([
            tokenLine,
            ['expires_at', details.deploy_token_expires_at],
            ['install_path', details.install_path],
            ['deploy_mode', details.deploy_mode],
            ['session_id', details.session_id],
          ]),
        );
        if (tokenFile === undefined) {
          ctx.output.warn(
            `the deploy token is a secret: it installs a node, once, within ${minutes} minutes. Don't share it or paste it into a chat.`,
          );
          ctx.output.next(`Next: put it in ./deploy-token, a file only you can read (umask 077; cat > deploy-token), then: ${install}`);
        } else {
          ctx.output.success(`Deploy token written to ${tokenFile} (mode 0600); it installs a node once, within ${minutes} minutes.`);
          ctx.output.next(`Next: ${install}`);
        }
      })
  );
}

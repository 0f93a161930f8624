// swarm-node login: sign in with a code mailed to the address (docs/api.md "Sign-in: a verified inbox"), as `gh auth
// login` does with its device code; or bring a JWT (a file, stdin, SVC_JWT). The JWT is kept in 0600 credentials.
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { isEmailAddress } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import { TIER_IDS, isTierId, type TierId } from '../../contract/tiers.js';
import type { SignedIn } from '../../node/identity/session.js';
import { contextFor, type CommandContext } from '../context.js';
import { codeReader } from '../sign-in-code.js';
import { keyValues } from '../table.js';

interface LoginOptions {
  email?: string;
  offer?: TierId;
  tier?: TierId;
  merchant?: string;
  codeFile?: string;
  sendCode?: boolean;
  tokenFile?: string;
  tokenStdin?: boolean;
}

export function loginCommand(): Command {
  return new Command('login')
    .description('sign in with a code mailed to your address (or store a JWT you already have)')
    .option('--email <email>', "the address you paid with (asked in a terminal; default: this node's user)")
    .addOption(new Option('--offer <tier_id>', 'the offer to sign in for (default: one you paid for; alias: --tier)').choices(TIER_IDS))
    .addOption(new Option('--tier <tier_id>').choices(TIER_IDS).hideHelp())
    .option('--send-code', 'only mail the code now; a later login (with --code-file or the code on stdin) uses it')
    .option('--code-file <file>', 'read the mailed code from this file (or a named pipe) instead of asking')
    .option('--merchant <id>', 'the merchant id (default: config merchant_id)')
    .option('--token-file <file>', 'store the JWT read from this file')
    .option('--token-stdin', 'store the JWT read from standard input')
    .addHelpText(
      'after',
      `
The service mails a one-time code to the address (valid 10 minutes, 5 tries); type it when asked. Off a terminal
the code is read from --code-file, or from standard input. A payment never signs anyone in: the code proves you
read the address. The JWT is a secret: never an argument; kept in etc/credentials.json (mode 0600). With no option
and no terminal, a JWT in the environment variable SVC_JWT is stored. Changes to your fleet or code (a deploy
token, an upload, removing a node) need a sign-in within the last 15 minutes: run login again when asked.

Example:
  $ swarm-node login --email you@example.com
  $ swarm-node login --email you@example.com --send-code     # in a script: mail the code now…
  $ swarm-node login --email you@example.com --code-file code.txt   # …and sign in with it once it is in code.txt
  $ swarm-node login --token-stdin < ~/svc.jwt`,
    )
    .action(async (options: LoginOptions, command: Command) => {
      const ctx = contextFor(command);
      const [session, token] = await Promise.all([import('../../node/identity/session.js'), import('../../node/identity/token.js')]);
      const deps = { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile };
      const given = givenToken(ctx, options, token.normalizeTokenText);
      let signedIn: SignedIn;
      if (given !== undefined) {
        signedIn = await session.loginWithToken(deps, given);
      } else {
        const email = await signInEmail(ctx, options);
        if (options.sendCode === true) {
          if (options.codeFile !== undefined)
            throw new SvcError('usage', '--send-code only mails the code; give --code-file to the login that follows');
          const pending = await session.sendSignInCode(deps, email);
          ctx.output.result(pending, (p) => `Sent a sign-in code to ${p.email} (valid until ${p.expires_at}).`);
          ctx.output.next(
            `Next: once the code is in a file (code.txt here): swarm-node login --email ${pending.email} --code-file code.txt (or pipe the code in).`,
          );
          return;
        }
        const offer = offerOf(options);
        const stored = ctx.credentials();
        const likelyOffer = [stored.node?.tier_id, stored.jwt?.tier].find(isTierId);
        const merchantId = options.merchant ?? ctx.config().merchant_id;
        signedIn = await session.signInByMail(deps, { email, offer, likelyOffer, merchantId }, codeReader(ctx, options.codeFile));
      }
      ctx.output.result(signedIn, renderSignedIn);
      ctx.output.info(`Token stored in ${signedIn.credentials_file} (mode 0600).`);
      if (signedIn.docs_sections.length > 0)
        ctx.output.next(
          `Next: read the unlocked docs (swarm-node docs ${signedIn.docs_sections[0]}), or choose an agent to run (the catalog: swarm-node agents).`,
        );
    });
}

function offerOf(options: LoginOptions): TierId | undefined {
  if (options.offer !== undefined && options.tier !== undefined && options.offer !== options.tier) {
    throw new SvcError('usage', '--offer and --tier are one option (an alias); give it once');
  }
  return options.offer ?? options.tier;
}

/** A JWT given by file, stdin or SVC_JWT; undefined: sign in by mail. */
function givenToken(
  ctx: CommandContext,
  options: LoginOptions,
  normalizeTokenText: (text: string, from: string) => string,
): string | undefined {
  const byMail =
    options.email !== undefined ||
    options.offer !== undefined ||
    options.tier !== undefined ||
    options.codeFile !== undefined ||
    options.sendCode === true;
  const sources = [byMail, options.tokenFile !== undefined, options.tokenStdin === true].filter(Boolean).length;
  if (sources > 1) throw new SvcError('usage', 'give one of: --email (a code by mail), --token-file, --token-stdin');
  if (options.tokenFile !== undefined) return normalizeTokenText(readTokenFile(options.tokenFile), options.tokenFile);
  if (options.tokenStdin === true) {
    if (process.stdin.isTTY) {
      throw new SvcError('usage', '--token-stdin reads a piped token and never prompts', {
        remedy: 'Pipe the file holding it in (token.jwt here): swarm-node login --token-stdin < token.jwt',
      });
    }
    return normalizeTokenText(readFileSync(0, 'utf8'), 'standard input');
  }
  const fromEnv = ctx.env.SVC_JWT;
  if (!byMail && !ctx.canPrompt() && fromEnv !== undefined && fromEnv.trim() !== '') return normalizeTokenText(fromEnv, 'SVC_JWT');
  return undefined;
}

/** --email; else asked in a terminal (suggesting the known address); else the address this home already knows. */
async function signInEmail(ctx: CommandContext, options: LoginOptions): Promise<string> {
  if (options.email !== undefined) {
    if (!isEmailAddress(options.email.trim()))
      throw new SvcError('usage', `--email ${JSON.stringify(options.email)} is not an e-mail address`);
    return options.email.trim();
  }
  const stored = ctx.credentials();
  const known = stored.jwt?.sub ?? stored.node?.user_id;
  if (ctx.canPrompt()) {
    const { terminalPrompts } = await import('../prompts.js');
    return terminalPrompts().email(known);
  }
  if (known !== undefined) return known;
  throw new SvcError('usage', '--email is needed: there is no terminal to ask for the address, and this home knows none', {
    remedy:
      'Run it in a terminal, where it asks (swarm-node login), or name the address: swarm-node login --email you@example.com --send-code, then the login with the code.',
  });
}

function readTokenFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new SvcError('usage', `cannot read the token file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

export function renderSignedIn(signedIn: SignedIn): string {
  return keyValues([
    ['signed in as', signedIn.sub],
    ['tier', signedIn.tier],
    ['expires_at', `${signedIn.expires_at} (${signedIn.days_left} days left)`],
    ['docs sections', signedIn.docs_sections.join(', ') || '(none)'],
  ]);
}

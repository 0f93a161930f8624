// swarm-node login: get (issue-token) or bring (a file, stdin, SVC_JWT) the JWT, verify it, keep it in 0600 credentials.
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { TIER_IDS, type TierId } from '../../contract/tiers.js';
import { loginWithPayment, loginWithToken, normalizeTokenText, type SignedIn } from '../../node/session.js';
import { contextFor, type CommandContext } from '../context.js';
import { keyValues } from '../table.js';

interface LoginOptions {
  email?: string;
  offer?: TierId;
  merchant?: string;
  tokenFile?: string;
  tokenStdin?: boolean;
}

export function loginCommand(): Command {
  return new Command('login')
    .description('sign this node in: issue a JWT for a confirmed payment, or store one you already have')
    .option('--email <email>', 'the checkout e-mail')
    .addOption(new Option('--offer <tier_id>', 'the offer (tier) paid for').choices(TIER_IDS))
    .option('--merchant <id>', 'the merchant id (default: config merchant_id)')
    .option('--token-file <file>', 'store the JWT read from this file')
    .option('--token-stdin', 'store the JWT read from standard input')
    .addHelpText(
      'after',
      `
The JWT is a secret: it is never taken as an argument. It is kept in etc/credentials.json (mode 0600).
With no option, a JWT in the environment variable SVC_JWT is stored.

Example:
  $ swarm-node login --email you@example.com --offer svc_starter_agents
  $ swarm-node login --token-stdin < ~/svc.jwt`,
    )
    .action(async (options: LoginOptions, command: Command) => {
      const ctx = contextFor(command);
      const token = readGivenToken(ctx, options);
      const deps = { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile };
      let signedIn: SignedIn;
      if (token !== undefined) {
        signedIn = await loginWithToken(deps, token);
      } else {
        const merchantId = options.merchant ?? ctx.config().merchant_id;
        signedIn = await loginWithPayment(deps, { email: options.email!, offer: options.offer!, merchantId });
      }
      ctx.output.result(signedIn, renderSignedIn);
      ctx.output.info(`Token stored in ${signedIn.credentials_file} (mode 0600).`);
      if (signedIn.docs_sections.length > 0) ctx.output.info(`Next: read the unlocked docs (swarm-node docs ${signedIn.docs_sections[0]}) or register an agent (swarm-node register <agent_id>).`);
    });
}

/** The JWT given by file, stdin or SVC_JWT; undefined when the e-mail and offer ask the service for one. */
function readGivenToken(ctx: CommandContext, options: LoginOptions): string | undefined {
  const paid = options.email !== undefined || options.offer !== undefined;
  const sources = [paid, options.tokenFile !== undefined, options.tokenStdin === true].filter(Boolean).length;
  if (sources > 1) throw new SvcError('usage', 'give one of: --email with --offer, --token-file, --token-stdin');
  if (paid) {
    if (options.email === undefined || options.offer === undefined) throw new SvcError('usage', '--email and --offer go together');
    return undefined;
  }
  if (options.tokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.tokenFile, 'utf8');
    } catch (error) {
      throw new SvcError('usage', `cannot read the token file ${options.tokenFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    return normalizeTokenText(text, options.tokenFile);
  }
  if (options.tokenStdin === true) {
    if (process.stdin.isTTY) {
      throw new SvcError('usage', '--token-stdin reads a piped token and never prompts', { remedy: 'Pipe it: swarm-node login --token-stdin < token-file' });
    }
    return normalizeTokenText(readFileSync(0, 'utf8'), 'standard input');
  }
  const fromEnv = ctx.env.SVC_JWT;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return normalizeTokenText(fromEnv, 'SVC_JWT');
  throw new SvcError('usage', 'say how to sign in: --email and --offer, --token-file, --token-stdin, or SVC_JWT', {
    remedy: 'Example: swarm-node login --email you@example.com --offer svc_starter_agents',
  });
}

export function renderSignedIn(signedIn: SignedIn): string {
  return keyValues([
    ['signed in as', signedIn.sub],
    ['tier', signedIn.tier],
    ['expires_at', `${signedIn.expires_at} (${signedIn.days_left} days left)`],
    ['docs sections', signedIn.docs_sections.join(', ') || '(none)'],
  ]);
}

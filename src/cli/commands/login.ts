// swarm-node login: get (issue-token) or bring (a file, stdin, SVC_JWT) the JWT, verify it, keep it in 0600 credentials.
import { Command, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { SvcError } from '../../contract/errors.js';
import { TIER_IDS, type TierId } from '../../contract/tiers.js';
import type { NodeEnrollment } from '../../node/identity/credentials.js';
import type { SignedIn, SignInWith } from '../../node/identity/session.js';
import { contextFor, type CommandContext } from '../context.js';
import { keyValues } from '../table.js';

interface LoginOptions {
  email?: string;
  offer?: TierId;
  tier?: TierId;
  payment?: string;
  merchant?: string;
  tokenFile?: string;
  tokenStdin?: boolean;
}

export function loginCommand(): Command {
  return new Command('login')
    .description('sign this node in: issue a JWT for your payment (or as this enrolled node), or store one you already have')
    .option('--email <email>', 'the checkout e-mail')
    .addOption(new Option('--offer <tier_id>', 'the offer (tier) paid for (alias: --tier)').choices(TIER_IDS))
    .addOption(new Option('--tier <tier_id>').choices(TIER_IDS).hideHelp())
    .option('--payment <payment_id>', 'the payment id from checkout: the proof that you paid')
    .option('--merchant <id>', 'the merchant id (default: config merchant_id)')
    .option('--token-file <file>', 'store the JWT read from this file')
    .option('--token-stdin', 'store the JWT read from standard input')
    .addHelpText(
      'after',
      `
Issuing a JWT needs proof of payment: the payment id you got at checkout (--payment), or, on a node enrolled with
a deploy token (swarm-node install), the node's own credential, so there \`swarm-node login\` alone signs in as the
node's user and offer. The JWT is a secret: never an argument; kept in etc/credentials.json (mode 0600).
With no option on a node that is not enrolled, a JWT in the environment variable SVC_JWT is stored.

Example:
  $ swarm-node login --email you@example.com --offer svc_starter_agents --payment pay_123
  $ sudo swarm-node login                          # on an installed node
  $ swarm-node login --token-stdin < ~/svc.jwt`,
    )
    .action(async (options: LoginOptions, command: Command) => {
      const ctx = contextFor(command);
      // Loaded here, not at start: --help and every other command have no use for them.
      const [session, token] = await Promise.all([import('../../node/identity/session.js'), import('../../node/identity/token.js')]);
      const how = howToSignIn(ctx, options, { nodeLogin: session.nodeLogin, normalizeTokenText: token.normalizeTokenText });
      const deps = { client: await ctx.client(), clock: ctx.clock, credentialsFile: ctx.paths.credentialsFile };
      const signedIn = await session.signIn(deps, how);
      ctx.output.result(signedIn, renderSignedIn);
      ctx.output.info(`Token stored in ${signedIn.credentials_file} (mode 0600).`);
      if (signedIn.docs_sections.length > 0) ctx.output.info(`Next: read the unlocked docs (swarm-node docs ${signedIn.docs_sections[0]}) or register an agent (swarm-node register <agent_id>).`);
    });
}

/** A JWT given by file, stdin or SVC_JWT; or what to ask issue-token for, with its proof of payment. */
interface Readers {
  nodeLogin: typeof import('../../node/identity/session.js').nodeLogin;
  normalizeTokenText: typeof import('../../node/identity/token.js').normalizeTokenText;
}

function howToSignIn(ctx: CommandContext, options: LoginOptions, { nodeLogin, normalizeTokenText }: Readers): SignInWith {
  if (options.offer !== undefined && options.tier !== undefined && options.offer !== options.tier) {
    throw new SvcError('usage', '--offer and --tier are one option (an alias); give it once');
  }
  const offer = options.offer ?? options.tier;
  const paid = options.email !== undefined || offer !== undefined || options.payment !== undefined;
  const sources = [paid, options.tokenFile !== undefined, options.tokenStdin === true].filter(Boolean).length;
  if (sources > 1) throw new SvcError('usage', 'give one of: --email with --offer and --payment, --token-file, --token-stdin');
  const merchantId = options.merchant ?? ctx.config().merchant_id;
  const enrolled = nodeEnrollmentOf(ctx);
  if (paid) {
    if (options.email === undefined || offer === undefined) throw new SvcError('usage', '--email and --offer go together (with --payment)');
    if (options.payment !== undefined) return { login: { email: options.email, offer, merchantId, proof: { paymentId: options.payment } } };
    const asNode = enrolled === undefined ? undefined : nodeLogin(enrolled, merchantId);
    if (asNode === undefined) throw paymentNeeded();
    return { login: { ...asNode, email: options.email, offer } };
  }
  if (options.tokenFile !== undefined) return { token: normalizeTokenText(readTokenFile(options.tokenFile), options.tokenFile) };
  if (options.tokenStdin === true) {
    if (process.stdin.isTTY) {
      throw new SvcError('usage', '--token-stdin reads a piped token and never prompts', { remedy: 'Pipe it: swarm-node login --token-stdin < token-file' });
    }
    return { token: normalizeTokenText(readFileSync(0, 'utf8'), 'standard input') };
  }
  const fromEnv = ctx.env.SVC_JWT;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { token: normalizeTokenText(fromEnv, 'SVC_JWT') };
  const asNode = enrolled === undefined ? undefined : nodeLogin(enrolled, merchantId);
  if (asNode !== undefined) return { login: asNode };
  throw new SvcError('usage', 'say how to sign in: --email, --offer and --payment; --token-file; --token-stdin; or SVC_JWT', {
    remedy: 'Example: swarm-node login --email you@example.com --offer svc_starter_agents --payment pay_123',
  });
}

function nodeEnrollmentOf(ctx: CommandContext): NodeEnrollment | undefined {
  return ctx.credentials().node;
}

function paymentNeeded(): SvcError {
  return new SvcError('usage', '--payment is needed: the payment id from checkout proves the payment', {
    remedy: 'Add --payment <payment_id> (the id the payment provider gave you); a node enrolled with a deploy token signs in without one.',
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

// `svc-api sandbox pay|confirm|fund|mail`: the sandbox provider's checkout, confirmation and wallet funding, and the
// sandbox's outbox, from a shell, over HTTP to a running `svc-api --sandbox` (the endpoints of docs/api.md "The
// sandbox payment provider", "Mail"), so an operator trying the sandbox needs no API reference to pay, sign in and
// fund. The service is --base-url, else SVC_BASE_URL (as swarm-node reads it), else the local default.
import { programWord, searchPath } from '../lib/program-word.js';
import { parseArgs } from 'node:util';
import { SvcError } from '../contract/errors.js';
import { formatDollars, parseDollarsToCents } from '../contract/money.js';
import type { SandboxPayment } from '../contract/schemas.js';
import { TIER_IDS, isTierId } from '../contract/tiers.js';
import { inFlagTerms, type FlagTerms } from '../lib/flag-terms.js';

export const SANDBOX_USAGE = `Usage: svc-api sandbox <command> [--base-url <url>] [--json]

Talks to a running svc-api started with --sandbox, as its payment provider's checkout would.

Commands:
  pay --offer <tier_id> --email <e> [--amount <dollars>]
                        a checkout: a PENDING payment (without --amount, the tier's sandbox price)
  confirm <payment_id>  confirm it, and wait until its webhook has reached the service
  fund --email <e> --amount <dollars>
                        fund that user's wallet: a svc_pay_wallet_fund payment, confirmed and credited
  mail --to <e> [--limit <n>]
                        the mail the sandbox sent that address (sign-in codes), newest first

Options:
  --base-url <url>      the svc-api to talk to      default: SVC_BASE_URL, else http://127.0.0.1:8787
  --json                print one JSON document (the payment, or the messages) on stdout
  -h, --help            show this help

Exit codes: 0 ok, 1 failure, 2 usage, 6 svc-api unreachable.

Example:
  svc-api sandbox pay --offer svc_starter_agents --email you@example.com
  svc-api sandbox confirm pay_0123456789abcdef01234567
  svc-api sandbox fund --email you@example.com --amount 5.00
  svc-api sandbox mail --to you@example.com --limit 1
`;

const DEFAULT_BASE_URL = 'http://127.0.0.1:8787';
const WALLET_FUND_OFFER = 'svc_pay_wallet_fund';
/** The provider retries its webhook for as long as the service runs; past this, something is wrong to look at. */
const WEBHOOK_WAIT_MS = 30_000;
const POLL_MS = 100;
const REQUEST_TIMEOUT_MS = 10_000;
/** The largest amount the provider takes (SandboxPaymentRequest), checked here to say it in dollars. */
const MAX_AMOUNT_CENTS = 100_000_000;

const SANDBOX_TERMS: FlagTerms = {
  fields: { offer_id: '--offer', customer_email: '--email', amount_cents: '--amount', to: '--to' },
  remedies: { invalid_request: 'Correct the option named above and run it again.' },
};

interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

type Values = Record<string, string | boolean | undefined>;

/** Runs one sandbox command; returns the exit code. */
export async function runSandboxCommand(
  argv: string[],
  io: Io = process,
  env: NodeJS.ProcessEnv = process.env,
  entryScript: string | undefined = process.argv[1],
): Promise<number> {
  const json = argv.includes('--json');
  const typed = asTyped(entryScript, env);
  try {
    const { values, positionals } = parse(argv);
    if (values.help === true) {
      io.stdout.write(SANDBOX_USAGE);
      return 0;
    }
    const [command, ...rest] = positionals;
    if (command === undefined) throw usage('give a command: pay, confirm, fund or mail');
    const baseUrl = baseUrlOf(values['base-url'] ?? env.SVC_BASE_URL);
    const provider = new SandboxProvider(baseUrl);
    // A next step printed for this service names it, unless it is the default: it must work as printed.
    const target = baseUrl === DEFAULT_BASE_URL ? '' : ` --base-url ${baseUrl}`;
    const result = await dispatch(command, values, rest, provider, target);
    io.stdout.write(json ? `${JSON.stringify(result.document, null, 2)}\n` : `${typed(result.human)}\n`);
    return 0;
  } catch (error) {
    const failure = error instanceof SvcError ? error : new SvcError('failed', (error as Error).message);
    if (json) {
      const { code, message, remedy } = failure;
      io.stdout.write(`${JSON.stringify({ error: { code, message, ...(remedy === undefined ? {} : { remedy }) } }, null, 2)}\n`);
    } else {
      io.stderr.write(`svc-api sandbox: ${failure.message}\n${failure.remedy === undefined ? '' : `${typed(failure.remedy)}\n`}`);
    }
    return exitCodeOf(failure);
  }
}

/**
 * A person's text with each svc-api and swarm-node command naming the program as their shell finds it: in a
 * checkout neither is on the PATH, and `Next: svc-api sandbox confirm …` must run as printed (program-word.ts).
 */
function asTyped(entryScript: string | undefined, env: NodeJS.ProcessEnv): (text: string) => string {
  const dirs = searchPath(env.PATH);
  const svcApi = programWord('svc-api', entryScript, process.cwd(), dirs);
  const swarmNode = programWord('swarm-node', entryScript, process.cwd(), dirs);
  return (text) =>
    text
      .replace(/(?<![\w/.-])svc-api (?=sandbox |--sandbox )/g, `${svcApi} `)
      .replace(/(?<![\w/.-])swarm-node (?=login )/g, `${swarmNode} `);
}

function parse(args: string[]): { values: Values; positionals: string[] } {
  try {
    return parseArgs({
      args,
      options: {
        offer: { type: 'string' },
        email: { type: 'string' },
        amount: { type: 'string' },
        to: { type: 'string' },
        limit: { type: 'string' },
        'base-url': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (error) {
    throw usage((error as Error).message);
  }
}

async function dispatch(
  command: string,
  values: Values,
  positionals: string[],
  provider: SandboxProvider,
  target: string,
): Promise<{ document: unknown; human: string }> {
  switch (command) {
    case 'pay': {
      noPositionals(positionals);
      const offer = required(values, 'offer');
      if (!isTierId(offer)) throw usage(`--offer must be one of ${TIER_IDS.join(', ')}, got "${offer}"`);
      const amount = values.amount === undefined ? undefined : cents(values.amount as string);
      const payment = await provider.pay(offer, required(values, 'email'), amount);
      return { document: payment, human: `${describe(payment)}\nNext: svc-api sandbox confirm ${payment.payment_id}${target}` };
    }
    case 'confirm': {
      const [paymentId, ...extra] = positionals;
      if (paymentId === undefined || extra.length > 0) throw usage('give one payment id: svc-api sandbox confirm <payment_id>');
      const payment = await provider.confirm(paymentId);
      const swarmNodeTarget = target === '' ? '' : ` (with SVC_BASE_URL=${target.slice(' --base-url '.length)})`;
      return {
        document: payment,
        human: `${describe(payment)}\nThe service has the confirmation. Sign in as ${payment.customer_email}: a code is mailed to the address${swarmNodeTarget}:\n  swarm-node login --email ${payment.customer_email}\nIn the sandbox, the code is in its outbox: svc-api sandbox mail --to ${payment.customer_email}${target}`,
      };
    }
    case 'fund': {
      noPositionals(positionals);
      const email = required(values, 'email');
      const amount = cents(required(values, 'amount'));
      const payment = await provider.confirm((await provider.pay(WALLET_FUND_OFFER, email, amount)).payment_id);
      return {
        document: payment,
        human: `Funded the wallet of ${payment.customer_email} with ${formatDollars(payment.amount_cents)} (payment ${payment.payment_id}).`,
      };
    }
    case 'mail': {
      noPositionals(positionals);
      const to = required(values, 'to');
      const limit = values.limit === undefined ? 10 : count(values.limit as string);
      const mail = await provider.mail(to, limit);
      const human =
        mail.messages.length === 0
          ? `No mail to ${to} yet.`
          : mail.messages.map((message) => `${message.sent_at}  ${message.subject}\n${indent(message.text)}`).join('\n\n');
      return { document: mail, human };
    }
    default:
      throw usage(`unknown sandbox command "${command}": pay, confirm, fund or mail`);
  }
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? '' : `    ${line}`))
    .join('\n');
}

function count(text: string): number {
  if (!/^\d{1,2}$/.test(text) || Number(text) < 1 || Number(text) > 50) throw usage(`--limit takes 1 to 50, got "${text}"`);
  return Number(text);
}

interface SandboxMail {
  messages: Array<{ to: string; subject: string; text: string; sent_at: string }>;
}

/** The sandbox provider's endpoints and its outbox, over real HTTP. */
class SandboxProvider {
  readonly #baseUrl: string;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  mail(to: string, limit: number): Promise<SandboxMail> {
    return this.#call('GET', `/sandbox/mail?to=${encodeURIComponent(to)}&limit=${limit}`) as Promise<unknown> as Promise<SandboxMail>;
  }

  pay(offer_id: string, customer_email: string, amount_cents: number | undefined): Promise<SandboxPayment> {
    return this.#call('POST', '/sandbox/payments', { offer_id, customer_email, ...(amount_cents === undefined ? {} : { amount_cents }) });
  }

  /** Confirms, then waits until the webhook reached the service: only then does the service know the payment. */
  async confirm(paymentId: string): Promise<SandboxPayment> {
    let payment = await this.#call('POST', `/sandbox/payments/${encodeURIComponent(paymentId)}/confirm`);
    const deadline = Date.now() + WEBHOOK_WAIT_MS;
    while (!payment.webhook_delivered) {
      if (Date.now() > deadline) {
        throw new SvcError(
          'failed',
          `payment ${paymentId} is confirmed at the provider, but its webhook has not reached the service in ${WEBHOOK_WAIT_MS / 1000} s`,
          {
            remedy: "See svc-api's log; the provider keeps retrying, and svc-api sandbox confirm waits again.",
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      payment = await this.#call('GET', `/sandbox/payments/${encodeURIComponent(paymentId)}`);
    }
    return payment;
  }

  async #call(method: string, path: string, body?: unknown): Promise<SandboxPayment> {
    let response: Response;
    try {
      response = await fetch(`${this.#baseUrl}${path}`, {
        method,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const { cause } = error as { cause?: { code?: string; message?: string } };
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new SvcError('service_unreachable', `cannot reach svc-api at ${this.#baseUrl} (${reason})`, {
        remedy: 'Start it with: svc-api --sandbox --port 8787 --data-dir ./.svc-api-data, or give its URL with --base-url.',
      });
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SvcError('failed', `${this.#baseUrl} answered ${method} ${path} with HTTP ${response.status} and no JSON: is it svc-api?`);
    }
    if (response.ok) return parsed as SandboxPayment;
    const error = SvcError.fromProblem(parsed, response.status);
    // A route svc-api does not serve: it was started without --sandbox.
    if (error.code === 'not_found') {
      throw new SvcError('failed', `the svc-api at ${this.#baseUrl} serves no sandbox provider`, { remedy: 'Start it with --sandbox.' });
    }
    throw inFlagTerms(error, SANDBOX_TERMS);
  }
}

function describe(payment: SandboxPayment): string {
  return [
    `payment   ${payment.payment_id}`,
    `status    ${payment.status}${payment.webhook_delivered ? ' (the service has the webhook)' : ''}`,
    `offer     ${payment.offer_id}`,
    `email     ${payment.customer_email}`,
    `amount    ${formatDollars(payment.amount_cents)}`,
  ].join('\n');
}

function baseUrlOf(value: string | boolean | undefined): string {
  const text = typeof value === 'string' ? value : DEFAULT_BASE_URL;
  try {
    const url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw usage(`--base-url must be an http(s) URL, got "${text}"`);
  }
  return text.replace(/\/+$/, '');
}

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw usage(`--${name} is required`);
  return value;
}

function cents(dollars: string): number {
  const amount = parseDollarsToCents(dollars);
  if (amount === undefined || amount < 1 || amount > MAX_AMOUNT_CENTS) {
    throw usage(`--amount takes dollars from 0.01 to ${formatDollars(MAX_AMOUNT_CENTS).slice(1)}, such as 5 or 2.50; got "${dollars}"`);
  }
  return amount;
}

function noPositionals(positionals: string[]): void {
  if (positionals.length > 0) throw usage(`unexpected argument "${positionals[0]}"`);
}

function usage(message: string): SvcError {
  return new SvcError('usage', message, { remedy: 'See svc-api sandbox --help.' });
}

function exitCodeOf(error: SvcError): number {
  if (error.code === 'usage' || error.code === 'invalid_request') return 2;
  if (error.code === 'service_unreachable') return 6;
  return 1;
}

// The service's environment, checked once at start before anything is opened (docs/operations.md "Configuration"):
// a wrong value stops svc-api with one sentence naming the variable (exit 2), rather than a service that starts
// and then fails its first sign-in, logs nothing, or signs tokens with a key shorter than it looks.
import { ID_PATTERN } from '../../contract/schemas.js';
import { readPaymentProviderConfig, type PaymentProviderName } from '../payments/provider-config.js';
import { parseListenAddress, type ListenAddress } from './metrics-server.js';
import { smtpUrlProblem } from '../mail/smtp-transport.js';
import { vaultKeyProblem } from '../vault/vault-keys.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** secrets.ts turns it into the HS256 key; the same bound (RFC 7518 §3.2: a key at least as long as the hash). */
const MIN_JWT_KEY_BYTES = 32;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

export interface EnvConfig {
  logLevel: LogLevel;
  /** Where GET /metrics is served (metrics-server.ts); none when unset. */
  metricsListen: ListenAddress | undefined;
  /** SVC_PAYMENT_PROVIDER: main.ts refuses --sandbox beside a real provider. */
  paymentProvider: PaymentProviderName;
  /** SVC_STALE_NODE_AFTER in milliseconds (0: off); undefined when unset. */
  staleNodeAfterMs: number | undefined;
}

const STALE_UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const MIN_STALE_MS = STALE_UNIT_MS.h;
const MAX_STALE_MS = 365 * STALE_UNIT_MS.d;

/**
 * How long a node may be away before it is removed (svc-api --stale-node-after, SVC_STALE_NODE_AFTER): a whole
 * number and a unit, 1h to 365d (90m, 36h, 14d), or 0 / off to keep nodes however long they are away. At least an
 * hour, so a node is never removed for a gap between its polls (a lease is at most an hour).
 */
export function parseStaleNodeAfter(text: string): number {
  const value = text.trim().toLowerCase();
  if (value === '0' || value === 'off') return 0;
  const match = /^(\d{1,6})([mhd])$/.exec(value);
  const ms = match === null ? Number.NaN : Number(match[1]) * STALE_UNIT_MS[match[2] as keyof typeof STALE_UNIT_MS];
  if (!(ms >= MIN_STALE_MS && ms <= MAX_STALE_MS)) {
    throw new ConfigError(`must be a duration from 1h to 365d such as 36h or 14d, or 0 or off (got ${JSON.stringify(text)})`);
  }
  return ms;
}

export class ConfigError extends Error {}

/**
 * Why `value` is no public base URL: http or https, absolute, without credentials, query or fragment, and made of
 * URL characters a single-quoted shell word holds as they are (install.sh is served with SVC_PUBLIC_URL in one).
 */
function baseUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an absolute http or https URL (got ${JSON.stringify(value)})`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http or https URL (got ${JSON.stringify(value)})`;
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    return `must be a base URL without credentials, query or fragment (got ${JSON.stringify(value)})`;
  }
  if (!/^[A-Za-z0-9\-._~:/[\]@!$&()*+,;=%]+$/.test(value))
    return `must hold only URL characters, no quote or space (got ${JSON.stringify(value)})`;
  return undefined;
}

/**
 * Checks every SVC_ variable svc-api reads and returns what main.ts uses itself; the rest keep being read where they
 * are used (secrets.ts, server.ts), now known to be sound. Secret values are never repeated in a message.
 */
export function readEnvConfig(env: NodeJS.ProcessEnv): EnvConfig {
  const problems: string[] = [];
  const check = (name: string, problem: (value: string) => string | undefined): void => {
    const value = env[name];
    if (value === undefined) return;
    const found = problem(value);
    if (found !== undefined) problems.push(`${name} ${found}`);
  };
  /** A variable read by a parser that throws its problem: the value, or undefined when unset or refused (noted). */
  const parsed = <T>(name: string, parse: (value: string) => T): T | undefined => {
    let result: T | undefined;
    check(name, (value) => {
      try {
        result = parse(value);
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    });
    return result;
  };

  check('SVC_JWT_SECRET', (value) => {
    const text = value.trim();
    if (!BASE64URL.test(text) || Buffer.from(text, 'base64url').length < MIN_JWT_KEY_BYTES) {
      return `must be base64url of at least ${MIN_JWT_KEY_BYTES} bytes (node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")`;
    }
    return undefined;
  });
  check('SVC_WEBHOOK_SECRET', (value) => (value.trim() === '' ? 'must not be empty' : undefined));
  check('SVC_SECRETS_KEY', vaultKeyProblem);
  check('SVC_SECRETS_PREVIOUS_KEYS', (value) => {
    const problem = value
      .split(',')
      .filter((key) => key.trim() !== '')
      .map(vaultKeyProblem)
      .find((found) => found !== undefined);
    return problem === undefined ? undefined : `each key ${problem}`;
  });
  check('SVC_MERCHANT_ID', (value) =>
    new RegExp(ID_PATTERN).test(value) ? undefined : `must be 1 to 128 of A-Z a-z 0-9 _ . : - (got ${JSON.stringify(value)})`,
  );
  check('SVC_WALLET_URL', baseUrlProblem);
  check('SVC_PUBLIC_URL', baseUrlProblem);
  check('SVC_SMTP_URL', smtpUrlProblem);
  check('SVC_MAIL_FROM', (value) =>
    /^[^\r\n]{3,254}$/.test(value) && value.includes('@') ? undefined : 'must be an address such as "svc <no-reply@example.com>"',
  );
  check('SVC_LOG_LEVEL', (value) =>
    (LOG_LEVELS as readonly string[]).includes(value)
      ? undefined
      : `must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(value)})`,
  );
  const metricsListen = parsed('SVC_METRICS_LISTEN', parseListenAddress);
  const staleNodeAfterMs = parsed('SVC_STALE_NODE_AFTER', parseStaleNodeAfter);

  const provider = readPaymentProviderConfig(env);
  if ('problems' in provider) problems.push(...provider.problems);

  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return {
    logLevel: (env.SVC_LOG_LEVEL as LogLevel | undefined) ?? 'info',
    metricsListen,
    paymentProvider: 'config' in provider ? provider.config.name : 'sandbox',
    staleNodeAfterMs,
  };
}

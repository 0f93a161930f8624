// The service's environment, checked once at start before anything is opened (docs/operations.md "Configuration"):
// a wrong value stops svc-api with one sentence naming the variable (exit 2), rather than a service that starts
// and then fails its first sign-in, logs nothing, or signs tokens with a key shorter than it looks.
import { ID_PATTERN } from '../../contract/schemas.js';
import { readPaymentProviderConfig, type PaymentProviderName } from '../payments/provider-config.js';
import { parseListenAddress, type ListenAddress } from './metrics-server.js';

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
}

export class ConfigError extends Error {}

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

  check('SVC_JWT_SECRET', (value) => {
    const text = value.trim();
    if (!BASE64URL.test(text) || Buffer.from(text, 'base64url').length < MIN_JWT_KEY_BYTES) {
      return `must be base64url of at least ${MIN_JWT_KEY_BYTES} bytes (node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))")`;
    }
    return undefined;
  });
  check('SVC_WEBHOOK_SECRET', (value) => (value.trim() === '' ? 'must not be empty' : undefined));
  check('SVC_MERCHANT_ID', (value) =>
    new RegExp(ID_PATTERN).test(value) ? undefined : `must be 1 to 128 of A-Z a-z 0-9 _ . : - (got ${JSON.stringify(value)})`,
  );
  check('SVC_WALLET_URL', (value) => {
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
    return undefined;
  });
  check('SVC_LOG_LEVEL', (value) =>
    (LOG_LEVELS as readonly string[]).includes(value) ? undefined : `must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(value)})`,
  );
  let metricsListen: ListenAddress | undefined;
  check('SVC_METRICS_LISTEN', (value) => {
    try {
      metricsListen = parseListenAddress(value);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  });

  const provider = readPaymentProviderConfig(env);
  if ('problems' in provider) problems.push(...provider.problems);

  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return {
    logLevel: (env.SVC_LOG_LEVEL as LogLevel | undefined) ?? 'info',
    metricsListen,
    paymentProvider: 'config' in provider ? provider.config.name : 'sandbox',
  };
}

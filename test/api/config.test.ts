// svc-api's environment is checked at start (docs/operations.md "Configuration"): a wrong value stops the built
// program with exit 2 and one sentence naming the variable, before anything is created; a secret's value is never
// repeated. SVC_METRICS_LISTEN serves the metrics on their own address.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { SVC_API_BIN } from '../helpers/svc-api.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

function start(env: Record<string, string>, args: string[] = []) {
  const dataDir = join(tempDir('svc-config-'), 'data');
  const child = execa('node', [SVC_API_BIN, '--port', '0', '--data-dir', dataDir, ...args], {
    env: { SVC_LOG_LEVEL: 'silent', ...env },
    extendEnv: true,
    reject: false,
    // A start that wrongly succeeds is stopped, not waited for: the test then sees its exit code, not 2.
    timeout: 20_000,
  });
  return { child, dataDir };
}

describe('svc-api configuration from the environment', () => {
  afterAll(() => removeTempDirs());

  it.each([
    ['SVC_LOG_LEVEL', 'loud', /^svc-api: SVC_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)$/],
    ['SVC_WALLET_URL', 'wallet.example.com/pay', /^svc-api: SVC_WALLET_URL must be an absolute http or https URL/],
    ['SVC_PUBLIC_URL', 'svc.example.com', /^svc-api: SVC_PUBLIC_URL must be an absolute http or https URL/],
    // It goes into install.sh between single quotes: a quote would end the word and run the rest as a command.
    ['SVC_PUBLIC_URL', "https://svc.example.com/'$(id)'", /^svc-api: SVC_PUBLIC_URL must hold only URL characters, no quote or space/],
    ['SVC_MERCHANT_ID', 'merchant with spaces', /^svc-api: SVC_MERCHANT_ID must be 1 to 128 of/],
    ['SVC_METRICS_LISTEN', '9464', /^svc-api: SVC_METRICS_LISTEN must be HOST:PORT/],
    ['SVC_WEBHOOK_SECRET', '   ', /^svc-api: SVC_WEBHOOK_SECRET must not be empty$/],
    ['SVC_SECRETS_KEY', 'c2hvcnQ', /^svc-api: SVC_SECRETS_KEY must be base64url of exactly 32 bytes/],
    [
      'SVC_SECRETS_PREVIOUS_KEYS',
      `${'A'.repeat(43)},short`,
      /^svc-api: SVC_SECRETS_PREVIOUS_KEYS each key must be base64url of exactly 32 bytes/,
    ],
    ['SVC_PAYMENT_PROVIDER', 'paypal', /^svc-api: SVC_PAYMENT_PROVIDER must be one of sandbox, stripe \(got "paypal"\)$/],
    ['SVC_STRIPE_WEBHOOK_SECRET', 'whsec_abc', /^svc-api: SVC_STRIPE_WEBHOOK_SECRET is set but SVC_PAYMENT_PROVIDER is not stripe$/],
    [
      'SVC_STALE_NODE_AFTER',
      '10m',
      /^svc-api: SVC_STALE_NODE_AFTER must be a duration from 1h to 365d such as 36h or 14d, or 0 or off \(got "10m"\)$/,
    ],
  ])('refuses %s=%j with exit 2, naming it, before creating anything', async (name, value, message) => {
    const { child, dataDir } = start({ [name]: value });
    const result = await child;
    expect(result.exitCode, result.stderr).toBe(2);
    expect(result.stderr.trim()).toMatch(message);
    expect(result.stdout).toBe('');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('never repeats a secret it refuses, and names every wrong variable at once', async () => {
    const secret = 'not!base64url!at!all!but!long!enough!to!decode!to!32!bytes!';
    const { child } = start({ SVC_JWT_SECRET: secret, SVC_LOG_LEVEL: 'chatty' });
    const result = await child;
    expect(result.exitCode).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(/^svc-api: SVC_JWT_SECRET must be base64url of at least 32 bytes/),
      expect.stringMatching(/^svc-api: SVC_LOG_LEVEL must be/),
    ]);
    expect(result.stderr).not.toContain(secret);
  });

  it('with SVC_PAYMENT_PROVIDER=stripe, names each Stripe secret missing or malformed, never repeating it', async () => {
    const key = 'pk_live_aPublishableKeyNotASecretOne';
    const { child, dataDir } = start({ SVC_PAYMENT_PROVIDER: 'stripe', SVC_STRIPE_SECRET_KEY: key });
    const result = await child;
    expect(result.exitCode).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^svc-api: SVC_STRIPE_SECRET_KEY must be a Stripe secret or restricted key \(sk_live_…/),
      expect.stringMatching(/^svc-api: SVC_STRIPE_WEBHOOK_SECRET is required with SVC_PAYMENT_PROVIDER=stripe/),
    ]);
    expect(result.stderr).not.toContain(key);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('refuses --sandbox beside SVC_PAYMENT_PROVIDER=stripe as a usage error', async () => {
    const env = { SVC_PAYMENT_PROVIDER: 'stripe', SVC_STRIPE_SECRET_KEY: 'sk_test_abc123', SVC_STRIPE_WEBHOOK_SECRET: 'whsec_abc123' };
    const { child, dataDir } = start(env, ['--sandbox']);
    const result = await child;
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^svc-api: --sandbox serves the sandbox payment provider, which SVC_PAYMENT_PROVIDER=stripe replaces/);
    expect(existsSync(dataDir)).toBe(false);
  });

  it.each([
    ['--body-idle-seconds', '0'],
    ['--body-min-rate', '1.5'],
    ['--max-connections-per-address', 'many'],
    ['--headers-timeout-seconds', '0'],
    ['--keep-alive-seconds', '3601'],
    ['--artifact-idle-seconds', '1.5'],
  ])('refuses %s %s as a usage error', async (flag, value) => {
    const result = await start({}, [flag, value]).child;
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(new RegExp(`^svc-api: ${flag} must be a whole number from`));
  });

  it('refuses a malformed --metrics-listen as a usage error', async () => {
    const { child } = start({}, ['--metrics-listen', 'localhost']);
    const result = await child;
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/^svc-api: --metrics-listen must be HOST:PORT/);
  });

  it('serves the metrics at SVC_METRICS_LISTEN, and says where', async () => {
    const { child } = start({ SVC_METRICS_LISTEN: '127.0.0.1:0' }, ['--sandbox']);
    try {
      const metricsUrl = await new Promise<string>((resolve, reject) => {
        let seen = '';
        child.stdout!.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const match = /svc-api metrics on (\S+)/.exec(seen);
          if (match) resolve(match[1]!);
        });
        void child.then((result) => reject(new Error(`svc-api exited ${result.exitCode}: ${result.stderr}`)));
      });
      expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const response = await fetch(metricsUrl);
      expect(response.status).toBe(200);
      expect(await response.text()).toMatch(/^svc_runs_accepted_total 0$/m);
    } finally {
      child.kill('SIGTERM');
      expect((await child).exitCode).toBe(0);
    }
  });
});

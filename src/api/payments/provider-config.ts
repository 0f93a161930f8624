// Which payment provider the service talks to, and its secrets (docs/operations.md "Payments with Stripe"). All of it
// comes from the environment: the provider is a deployment's decision and its keys are secrets, which never go on
// a command line. Checked once at start (env-config.ts) and read again where the provider is built (server.ts).

export const PAYMENT_PROVIDERS = ['sandbox', 'stripe'] as const;
export type PaymentProviderName = (typeof PAYMENT_PROVIDERS)[number];

export interface StripeConfig {
  /** A secret (sk_) or restricted (rk_) key; the restricted one needs only read access to Checkout Sessions and PaymentIntents. */
  secretKey: string;
  /** The signing secret of the webhook endpoint (whsec_), shown by Stripe when the endpoint is created. */
  webhookSecret: string;
  /** Where the Stripe API is; another address only for a stand-in (tests, stripe-mock). */
  apiBase: { protocol: 'http' | 'https'; host: string; port: number };
}

export type PaymentProviderConfig = { name: 'sandbox' } | { name: 'stripe'; stripe: StripeConfig };

const STRIPE_API_BASE = 'https://api.stripe.com';
const STRIPE_SECRET_KEY = /^(sk|rk)_(test|live)_[A-Za-z0-9]+$/;
const STRIPE_WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/=_-]+$/;
const STRIPE_VARIABLES = ['SVC_STRIPE_SECRET_KEY', 'SVC_STRIPE_WEBHOOK_SECRET', 'SVC_STRIPE_API_BASE'] as const;

/**
 * The provider the environment asks for, or the sentences naming each wrong variable. A secret's value is never
 * repeated: a message says what the value must look like.
 */
export function readPaymentProviderConfig(env: NodeJS.ProcessEnv): { config: PaymentProviderConfig } | { problems: string[] } {
  const name = env.SVC_PAYMENT_PROVIDER ?? 'sandbox';
  if (!(PAYMENT_PROVIDERS as readonly string[]).includes(name)) {
    return { problems: [`SVC_PAYMENT_PROVIDER must be one of ${PAYMENT_PROVIDERS.join(', ')} (got ${JSON.stringify(name)})`] };
  }
  if (name === 'sandbox') {
    // Stripe's keys without SVC_PAYMENT_PROVIDER=stripe: most likely the provider variable was forgotten, and a
    // service that started anyway would refuse every Stripe delivery.
    const stray = STRIPE_VARIABLES.filter((variable) => env[variable] !== undefined);
    return stray.length === 0
      ? { config: { name: 'sandbox' } }
      : { problems: stray.map((variable) => `${variable} is set but SVC_PAYMENT_PROVIDER is not stripe`) };
  }

  const problems: string[] = [];
  const secretKey = env.SVC_STRIPE_SECRET_KEY?.trim() ?? '';
  const webhookSecret = env.SVC_STRIPE_WEBHOOK_SECRET?.trim() ?? '';
  if (env.SVC_STRIPE_SECRET_KEY === undefined)
    problems.push('SVC_STRIPE_SECRET_KEY is required with SVC_PAYMENT_PROVIDER=stripe (the API key, sk_… or rk_…)');
  else if (!STRIPE_SECRET_KEY.test(secretKey))
    problems.push('SVC_STRIPE_SECRET_KEY must be a Stripe secret or restricted key (sk_live_…, sk_test_…, rk_live_…, rk_test_…)');
  if (env.SVC_STRIPE_WEBHOOK_SECRET === undefined) {
    problems.push(
      "SVC_STRIPE_WEBHOOK_SECRET is required with SVC_PAYMENT_PROVIDER=stripe (the webhook endpoint's signing secret, whsec_…)",
    );
  } else if (!STRIPE_WEBHOOK_SECRET.test(webhookSecret)) {
    problems.push("SVC_STRIPE_WEBHOOK_SECRET must be the webhook endpoint's signing secret (whsec_…)");
  }
  const apiBase = parseApiBase(env.SVC_STRIPE_API_BASE ?? STRIPE_API_BASE);
  if (typeof apiBase === 'string') problems.push(`SVC_STRIPE_API_BASE ${apiBase}`);
  if (problems.length > 0 || typeof apiBase === 'string') return { problems };
  return { config: { name: 'stripe', stripe: { secretKey, webhookSecret, apiBase } } };
}

/** The Stripe client takes a protocol, host and port, so the base can have no path. */
function parseApiBase(value: string): StripeConfig['apiBase'] | string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an http or https URL such as ${STRIPE_API_BASE} (got ${JSON.stringify(value)})`;
  }
  // Credentials in it are not repeated either.
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (the key is SVC_STRIPE_SECRET_KEY)';
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    return `must be http(s)://HOST[:PORT] with no path or query (got ${JSON.stringify(value)})`;
  }
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return {
    protocol,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (protocol === 'https' ? 443 : 80) : Number(url.port),
  };
}

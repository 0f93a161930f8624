// The payment provider adapter (docs/decisions/0007-payment-provider.md): the one place the service asks
// the external provider about a payment. SVC_PAYMENT_PROVIDER chooses it (provider-config.ts). With stripe, it is
// Stripe (stripe-provider.ts). With the default, sandbox: under --sandbox the sandbox's books in the same database;
// without it the service is connected to no real provider, so a lookup finds nothing and payments become known only
// through verified webhooks.
import { SvcError } from '../../contract/errors.js';
import type { Store } from '../store/store.js';
import type { PaymentProvider } from '../context.js';
import { readPaymentProviderConfig, type PaymentProviderConfig } from './provider-config.js';
import { sandboxPaymentSelect, toProviderPayment } from './sandbox-books.js';

/**
 * The provider the environment names, refused before anything is created when it is wrong. main.ts has checked the
 * environment already; a service started in-process (tests, benches) is checked here.
 */
export function paymentProviderConfigOf(env: NodeJS.ProcessEnv, sandbox: boolean): PaymentProviderConfig {
  const read = readPaymentProviderConfig(env);
  if ('problems' in read) throw new SvcError('invalid_request', read.problems.join('; '));
  if (read.config.name === 'stripe' && sandbox) throw sandboxBesideStripe();
  return read.config;
}

export async function createPaymentProvider(options: {
  store: Store;
  sandbox: boolean;
  config: PaymentProviderConfig;
  merchantId: string;
}): Promise<PaymentProvider> {
  if (options.config.name === 'stripe') {
    const { createStripeProvider } = await import('./stripe-provider.js');
    return createStripeProvider(options.config.stripe, options.merchantId);
  }
  if (!options.sandbox) return { lookupPayment: async () => null };
  const select = sandboxPaymentSelect(options.store);
  return {
    async lookupPayment(paymentId) {
      const row = await select(paymentId);
      return row === undefined ? null : toProviderPayment(row);
    },
  };
}

/** The sandbox's checkout confirms through its own books, which a service on Stripe never reads. */
export function sandboxBesideStripe(): SvcError {
  return new SvcError('invalid_request', '--sandbox serves the sandbox payment provider, which SVC_PAYMENT_PROVIDER=stripe replaces', {
    remedy: 'Leave out --sandbox, or unset SVC_PAYMENT_PROVIDER.',
  });
}

// The payment provider adapter (DECISIONS.md "Payment provider and its webhook"): the one place the service asks
// the external provider about a payment. With --sandbox the provider is the sandbox's books in the same
// database; without it the reference service is connected to no real provider, so a lookup finds nothing and
// payments become known only through verified webhooks.
import type { Store } from '../store/store.js';
import type { PaymentProvider } from '../context.js';
import { sandboxPaymentSelect, toProviderPayment } from './sandbox-books.js';

export function createPaymentProvider(options: { store: Store; sandbox: boolean }): PaymentProvider {
  if (!options.sandbox) return { lookupPayment: async () => null };
  const select = sandboxPaymentSelect(options.store);
  return {
    async lookupPayment(paymentId) {
      const row = await select(paymentId);
      return row === undefined ? null : toProviderPayment(row);
    },
  };
}

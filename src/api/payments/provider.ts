// The payment provider adapter (DECISIONS.md). STUB: the paygate work fills this in.
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { PaymentProvider } from '../context.js';

export function createPaymentProvider(_options: { db: SqliteDatabase; sandbox: boolean }): PaymentProvider {
  return { lookupPayment: async () => null };
}

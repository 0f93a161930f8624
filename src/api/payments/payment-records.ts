// The service's own record of provider payments (table payments). Written only with the provider's word: a
// verified webhook or an answer of the provider adapter. Issue-token and activation read nothing else.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/schemas.js';
import { TIERS, isTierId } from '../../contract/tiers.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { PaymentProvider, ProviderPayment } from '../context.js';
import type { Ledger } from '../wallet/ledger.js';

export interface PaymentRecord extends ProviderPayment {
  confirmed_at: number | null;
  recorded_at: number;
}

export interface PaymentRecords {
  find(paymentId: string): Promise<PaymentRecord | undefined>;
  /**
   * Records what the provider says and returns the record as it now stands. A CONFIRMED record is final: a
   * later, older word of the provider (a PENDING lookup racing the webhook) never takes it back, and its
   * e-mail, offer and amount no longer change once money may have moved on them.
   * A confirmed wallet-fund payment to this merchant is credited to the payer's wallet in the same
   * transaction, once (the ledger keys credits by payment id).
   */
  recordProviderWord(payment: ProviderPayment): Promise<PaymentRecord>;
  /**
   * The service's record when it is CONFIRMED; else the provider's word (recorded, as if its webhook had arrived:
   * docs/decisions/0007-payment-provider.md, a lost webhook must not strand a paid user); else the record as it is;
   * undefined when neither the service nor the provider knows the payment.
   */
  resolve(paymentId: string): Promise<PaymentRecord | undefined>;
}

export function createPaymentRecords(deps: {
  store: Store;
  clock: Clock;
  ledger: Ledger;
  merchantId: string;
  provider: PaymentProvider;
}): PaymentRecords {
  const { store, clock, ledger, merchantId, provider } = deps;
  const find = (paymentId: string) => store.db.selectFrom('payments').selectAll().where('payment_id', '=', paymentId).executeTakeFirst();

  const recordProviderWord = (payment: ProviderPayment): Promise<PaymentRecord> =>
    store.transaction(async () => {
      const now = clock.now();
      const confirmed = payment.status === PAYMENT_CONFIRMED;
      // The upsert locks the payment's row until the transaction ends (on PostgreSQL as on SQLite), so the word of
      // the webhook and of a lookup on another instance are applied one after the other, and credit once.
      await store.db
        .insertInto('payments')
        .values({
          payment_id: payment.payment_id,
          status: payment.status,
          customer_email: normalizeEmail(payment.customer_email),
          offer_id: payment.offer_id,
          merchant_id: payment.merchant_id,
          amount_cents: payment.amount_cents,
          confirmed_at: confirmed ? now : null,
          recorded_at: now,
        })
        .onConflict((conflict) =>
          conflict
            .column('payment_id')
            .doUpdateSet((eb) => ({
              status: eb.ref('excluded.status'),
              customer_email: eb.ref('excluded.customer_email'),
              offer_id: eb.ref('excluded.offer_id'),
              merchant_id: eb.ref('excluded.merchant_id'),
              amount_cents: eb.ref('excluded.amount_cents'),
              confirmed_at: eb.ref('excluded.confirmed_at'),
              recorded_at: eb.ref('excluded.recorded_at'),
            }))
            .where('payments.status', '<>', PAYMENT_CONFIRMED),
        )
        .execute();
      const record = (await store
        .forUpdate(store.db.selectFrom('payments').selectAll().where('payment_id', '=', payment.payment_id))
        .executeTakeFirst())!;
      if (creditsWallet(record, merchantId)) {
        await ledger.creditPayment({ user_id: record.customer_email, payment_id: record.payment_id, amount_cents: record.amount_cents });
      }
      return record;
    });

  return {
    find,
    recordProviderWord,
    async resolve(paymentId) {
      const recorded = await find(paymentId);
      if (recorded?.status === PAYMENT_CONFIRMED) return recorded;
      const reported = await provider.lookupPayment(paymentId);
      if (reported !== null && reported.payment_id === paymentId) return recordProviderWord(reported);
      return recorded;
    },
  };
}

/** docs/decisions/0006-tiers.md: a wallet-fund payment credits its amount; only money paid to this merchant counts. */
function creditsWallet(record: PaymentRecord, merchantId: string): boolean {
  return (
    record.status === PAYMENT_CONFIRMED &&
    record.merchant_id === merchantId &&
    isTierId(record.offer_id) &&
    TIERS[record.offer_id].credits_wallet
  );
}

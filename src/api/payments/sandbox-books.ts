// The sandbox payment provider's own books (table sandbox_payments, svc-api --sandbox). It stands for an external
// system: the service reads it only through the provider adapter (provider.ts) and learns of confirmations only
// through the signed webhook.
import { randomBytes } from 'node:crypto';
import { PAYMENT_CONFIRMED, PAYMENT_PENDING } from '../../contract/claims.js';
import type { SandboxPayment } from '../../contract/schemas.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { ProviderPayment } from '../context.js';

export interface SandboxPaymentRow extends ProviderPayment {
  created_at: number;
  confirmed_at: number | null;
  webhook_event_id: string | null;
  webhook_delivered_at: number | null;
  webhook_attempts: number;
}

export interface SandboxBooks {
  create(payment: { offer_id: string; customer_email: string; merchant_id: string; amount_cents: number }): Promise<SandboxPaymentRow>;
  find(paymentId: string): Promise<SandboxPaymentRow | undefined>;
  /** Marks the payment CONFIRMED with its one webhook event id; confirming again changes nothing. */
  confirm(paymentId: string): Promise<SandboxPaymentRow | undefined>;
  recordDeliveryAttempt(paymentId: string, delivered: boolean): Promise<void>;
  /** Confirmed payments whose webhook has not reached the service yet (to resume after a restart). */
  undelivered(): Promise<SandboxPaymentRow[]>;
}

export function createSandboxBooks(store: Store, clock: Clock): SandboxBooks {
  const select = sandboxPaymentSelect(store);
  return {
    async create(payment) {
      const paymentId = `pay_${randomBytes(12).toString('hex')}`;
      await store.db
        .insertInto('sandbox_payments')
        .values({ ...payment, payment_id: paymentId, status: PAYMENT_PENDING, created_at: clock.now() })
        .execute();
      return (await select(paymentId))!;
    },
    find: select,
    async confirm(paymentId) {
      await store.db
        .updateTable('sandbox_payments')
        .set({ status: PAYMENT_CONFIRMED, confirmed_at: clock.now(), webhook_event_id: `evt_${randomBytes(12).toString('hex')}` })
        .where('payment_id', '=', paymentId)
        .where('status', '<>', PAYMENT_CONFIRMED)
        .execute();
      return select(paymentId);
    },
    async recordDeliveryAttempt(paymentId, delivered) {
      await store.db
        .updateTable('sandbox_payments')
        .set((eb) => ({
          webhook_attempts: eb('webhook_attempts', '+', 1),
          ...(delivered ? { webhook_delivered_at: eb.fn.coalesce('webhook_delivered_at', eb.val(clock.now())) } : {}),
        }))
        .where('payment_id', '=', paymentId)
        .execute();
    },
    undelivered: () =>
      store.db
        .selectFrom('sandbox_payments')
        .selectAll()
        .where('status', '=', PAYMENT_CONFIRMED)
        .where('webhook_delivered_at', 'is', null)
        .execute(),
  };
}

export function sandboxPaymentSelect(store: Store): (paymentId: string) => Promise<SandboxPaymentRow | undefined> {
  return (paymentId) => store.db.selectFrom('sandbox_payments').selectAll().where('payment_id', '=', paymentId).executeTakeFirst();
}

export function toSandboxPayment(row: SandboxPaymentRow): SandboxPayment {
  return {
    payment_id: row.payment_id,
    status: row.status,
    offer_id: row.offer_id,
    customer_email: row.customer_email,
    merchant_id: row.merchant_id,
    amount_cents: row.amount_cents,
    created_at: isoTime(row.created_at),
    confirmed_at: row.confirmed_at === null ? null : isoTime(row.confirmed_at),
    webhook_delivered: row.webhook_delivered_at !== null,
  };
}

export function toProviderPayment(row: SandboxPaymentRow): ProviderPayment {
  return {
    payment_id: row.payment_id,
    status: row.status,
    customer_email: row.customer_email,
    offer_id: row.offer_id,
    merchant_id: row.merchant_id,
    amount_cents: row.amount_cents,
  };
}

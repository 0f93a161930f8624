// The sandbox payment provider's own books (table sandbox_payments, svc-api --sandbox). It stands for an external
// system: the service reads it only through the provider adapter (provider.ts) and learns of confirmations only
// through the signed webhook.
import { randomBytes } from 'node:crypto';
import { PAYMENT_CONFIRMED, PAYMENT_PENDING } from '../../contract/claims.js';
import type { SandboxPayment } from '../../contract/schemas.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { ProviderPayment } from '../context.js';

export interface SandboxPaymentRow extends ProviderPayment {
  created_at: number;
  confirmed_at: number | null;
  webhook_event_id: string | null;
  webhook_delivered_at: number | null;
  webhook_attempts: number;
}

export interface SandboxBooks {
  create(payment: { offer_id: string; customer_email: string; merchant_id: string; amount_cents: number }): SandboxPaymentRow;
  find(paymentId: string): SandboxPaymentRow | undefined;
  /** Marks the payment CONFIRMED with its one webhook event id; confirming again changes nothing. */
  confirm(paymentId: string): SandboxPaymentRow | undefined;
  recordDeliveryAttempt(paymentId: string, delivered: boolean): void;
  /** Confirmed payments whose webhook has not reached the service yet (to resume after a restart). */
  undelivered(): SandboxPaymentRow[];
}

export function createSandboxBooks(db: SqliteDatabase, clock: Clock): SandboxBooks {
  const insert = db.prepare(`
    INSERT INTO sandbox_payments (payment_id, status, customer_email, offer_id, merchant_id, amount_cents, created_at)
    VALUES (@payment_id, '${PAYMENT_PENDING}', @customer_email, @offer_id, @merchant_id, @amount_cents, @created_at)`);
  const select = sandboxPaymentSelect(db);
  const markConfirmed = db.prepare(`
    UPDATE sandbox_payments SET status = '${PAYMENT_CONFIRMED}', confirmed_at = ?, webhook_event_id = ?
    WHERE payment_id = ? AND status <> '${PAYMENT_CONFIRMED}'`);
  const countAttempt = db.prepare(`
    UPDATE sandbox_payments SET webhook_attempts = webhook_attempts + 1,
      webhook_delivered_at = CASE WHEN @delivered = 1 THEN COALESCE(webhook_delivered_at, @now) ELSE webhook_delivered_at END
    WHERE payment_id = @payment_id`);
  const selectUndelivered = db.prepare<[], SandboxPaymentRow>(`
    SELECT * FROM sandbox_payments WHERE status = '${PAYMENT_CONFIRMED}' AND webhook_delivered_at IS NULL`);

  return {
    create(payment) {
      const paymentId = `pay_${randomBytes(12).toString('hex')}`;
      insert.run({ ...payment, payment_id: paymentId, created_at: clock.now() });
      return select.get(paymentId)!;
    },
    find: (paymentId) => select.get(paymentId),
    confirm(paymentId) {
      markConfirmed.run(clock.now(), `evt_${randomBytes(12).toString('hex')}`, paymentId);
      return select.get(paymentId);
    },
    recordDeliveryAttempt(paymentId, delivered) {
      countAttempt.run({ payment_id: paymentId, delivered: delivered ? 1 : 0, now: clock.now() });
    },
    undelivered: () => selectUndelivered.all(),
  };
}

export function sandboxPaymentSelect(db: SqliteDatabase) {
  return db.prepare<[string], SandboxPaymentRow>('SELECT * FROM sandbox_payments WHERE payment_id = ?');
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

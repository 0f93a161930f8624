// POST /v1/payments/webhook (DECISIONS.md "Payment provider and its webhook"): a verified event is the provider's
// word. Each event id is applied once, in the same transaction as its effect, so a replay (or the same event
// delivered twice at once) is acknowledged and changes nothing.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { PaymentConfirmedData, type WebhookEvent } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { PaymentRecords } from './payment-records.js';

export const PAYMENT_CONFIRMED_EVENT = 'payment.confirmed';

export type WebhookOutcome =
  | { received: true; duplicate: true }
  | { received: true; ignored: true }
  | { received: true; payment_id: string };

const paymentConfirmedData = TypeCompiler.Compile(PaymentConfirmedData);

export interface WebhookReceiver {
  apply(event: WebhookEvent): WebhookOutcome;
}

export function createWebhookReceiver(deps: { db: SqliteDatabase; clock: Clock; payments: PaymentRecords }): WebhookReceiver {
  const { db, clock, payments } = deps;
  const claimEvent = db.prepare('INSERT INTO webhook_events (event_id, type, received_at) VALUES (?, ?, ?) ON CONFLICT (event_id) DO NOTHING');

  const apply = db.transaction((event: WebhookEvent): WebhookOutcome => {
    // Checked before the event is claimed: a rejected event leaves no trace and may be sent again corrected.
    const data = event.type === PAYMENT_CONFIRMED_EVENT ? paymentConfirmedDataOf(event) : undefined;
    if (claimEvent.run(event.id, event.type, clock.now()).changes === 0) return { received: true, duplicate: true };
    // Unknown types are acknowledged so the provider stops retrying, and otherwise ignored.
    if (data === undefined) return { received: true, ignored: true };
    const record = payments.recordProviderWord(data);
    return { received: true, payment_id: record.payment_id };
  });

  return { apply };
}

function paymentConfirmedDataOf(event: WebhookEvent): PaymentConfirmedData {
  if (!paymentConfirmedData.Check(event.data)) {
    const errors = [...paymentConfirmedData.Errors(event.data)].map((error) => ({ path: `/data${error.path}`, message: error.message }));
    throw new SvcError('invalid_request', `${errors[0]?.path ?? '/data'}: ${errors[0]?.message ?? 'is invalid'}`, {
      extensions: { errors },
    });
  }
  if (event.data.status !== PAYMENT_CONFIRMED) {
    throw new SvcError('invalid_request', `/data/status: a ${PAYMENT_CONFIRMED_EVENT} event must carry status ${PAYMENT_CONFIRMED}`, {
      extensions: { errors: [{ path: '/data/status', message: `must be ${PAYMENT_CONFIRMED}` }] },
    });
  }
  return event.data;
}

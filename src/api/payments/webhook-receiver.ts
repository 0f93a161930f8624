// POST /v1/payments/webhook (docs/decisions/0007-payment-provider.md): a verified event is the provider's
// word. Each event id is applied once, in the same transaction as its effect, so a replay (or the same event
// delivered twice at once) is acknowledged and changes nothing.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { PaymentConfirmedData, type WebhookEvent } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { ProviderPayment } from '../context.js';
import type { PaymentRecords } from './payment-records.js';

export const PAYMENT_CONFIRMED_EVENT = 'payment.confirmed';

export type WebhookOutcome =
  { received: true; duplicate: true } | { received: true; ignored: true } | { received: true; payment_id: string };

const paymentConfirmedData = TypeCompiler.Compile(PaymentConfirmedData);

export interface WebhookReceiver {
  /** An event of the service's own scheme (Svc-Signature), whose `data` it checks. */
  apply(event: WebhookEvent): Promise<WebhookOutcome>;
  /**
   * An event of the provider's own scheme (Stripe), already read by its adapter: the CONFIRMED payment it reports,
   * or undefined for an event the service ignores. An ignored event is acknowledged and not recorded: a provider
   * sends many kinds, and the service keeps only those it acts on.
   */
  applyProviderEvent(event: { id: string; type: string }, payment: ProviderPayment | undefined): Promise<WebhookOutcome>;
}

export function createWebhookReceiver(deps: { store: Store; clock: Clock; payments: PaymentRecords }): WebhookReceiver {
  const { store, clock, payments } = deps;

  const claimAndApply = (event: { id: string; type: string }, payment: ProviderPayment | undefined): Promise<WebhookOutcome> =>
    store.transaction(async (): Promise<WebhookOutcome> => {
      // The same event delivered to two instances at once: the second insert waits for the first's commit (the
      // primary key), then inserts nothing, and that delivery is acknowledged as the duplicate it is.
      const claimed = await store.db
        .insertInto('webhook_events')
        .values({ event_id: event.id, type: event.type, received_at: clock.now() })
        .onConflict((conflict) => conflict.column('event_id').doNothing())
        .executeTakeFirst();
      if (claimed.numInsertedOrUpdatedRows === 0n) return { received: true, duplicate: true };
      // Unknown types are acknowledged so the provider stops retrying, and otherwise ignored.
      if (payment === undefined) return { received: true, ignored: true };
      const record = await payments.recordProviderWord(payment);
      return { received: true, payment_id: record.payment_id };
    });

  return {
    // Checked before the event is claimed: a rejected event leaves no trace and may be sent again corrected.
    apply: async (event) => claimAndApply(event, event.type === PAYMENT_CONFIRMED_EVENT ? paymentConfirmedDataOf(event) : undefined),
    applyProviderEvent: async (event, payment) =>
      payment === undefined ? { received: true, ignored: true } : claimAndApply(event, payment),
  };
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

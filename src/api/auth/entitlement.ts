// What a proven inbox may sign in for (docs/api.md "Sign-in: a verified inbox"): an offer the address has a
// CONFIRMED payment for, to this merchant. Asked only after the inbox was proven, so the answer may say which offers
// the address paid for: it tells the owner nothing they do not know.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { Store } from '../store/store.js';
import { PAYMENT_RETRY_AFTER_SECONDS } from '../paygate/sessions.js';

export interface EntitlingPayment {
  payment_id: string;
}

/** The latest CONFIRMED payment of `email` for `offerId`; 409 while one is only pending, 404 naming the paid offers otherwise. */
export async function entitlingPayment(
  store: Store,
  wanted: { email: string; offerId: string; merchantId: string },
): Promise<EntitlingPayment> {
  const payments = await store.db
    .selectFrom('payments')
    .select(['payment_id', 'offer_id', 'status', 'confirmed_at'])
    .where('customer_email', '=', wanted.email)
    .where('merchant_id', '=', wanted.merchantId)
    .execute();
  const confirmed = payments.filter((payment) => payment.status === PAYMENT_CONFIRMED);
  const entitling = confirmed
    .filter((payment) => payment.offer_id === wanted.offerId)
    .sort((a, b) => (b.confirmed_at ?? 0) - (a.confirmed_at ?? 0))[0];
  if (entitling !== undefined) return { payment_id: entitling.payment_id };
  if (payments.some((payment) => payment.offer_id === wanted.offerId)) {
    throw new SvcError('payment_not_confirmed', `your ${wanted.offerId} payment is not confirmed yet`, {
      retryAfterSeconds: PAYMENT_RETRY_AFTER_SECONDS,
      remedy: 'Wait for the payment provider to confirm the payment, then sign in again.',
    });
  }
  const paidOffers = [...new Set(confirmed.map((payment) => payment.offer_id))].sort();
  throw new SvcError('payment_not_found', `${wanted.email} has no confirmed payment for ${wanted.offerId}`, {
    remedy:
      paidOffers.length === 0
        ? `Pay for ${wanted.offerId} at the payment provider with this address, wait for its confirmation, then sign in again.`
        : `Sign in for an offer you paid for: ${paidOffers.join(', ')}.`,
    extensions: { paid_offers: paidOffers },
  });
}

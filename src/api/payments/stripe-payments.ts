// What a Stripe Checkout Session or PaymentIntent says about a payment of this service (docs/api.md "Payments with
// Stripe"), the same whether it came in a verified webhook or from a lookup: its id, whether it is paid, the payer's
// e-mail, the offer (metadata.offer_id, set by whoever created the checkout) and the amount in USD cents.
import type Stripe from 'stripe';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { PAYMENT_CONFIRMED, PAYMENT_PENDING } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { PaymentConfirmedData } from '../../contract/schemas.js';
import { TIERS, TIER_IDS, isTierId } from '../../contract/tiers.js';
import type { ProviderPayment } from '../context.js';

/** The wallet and the catalog's prices are in US dollars; Stripe gives amounts in the currency's smallest unit. */
export const STRIPE_CURRENCY = 'usd';
/** The metadata key naming the offer, on the Checkout Session (or on a PaymentIntent made without Checkout). */
export const OFFER_METADATA_KEY = 'offer_id';

const providerPayment = TypeCompiler.Compile(PaymentConfirmedData);

/**
 * A Checkout Session's payment, keyed by the session's id (cs_…: what its success page can show the payer as
 * {CHECKOUT_SESSION_ID}); undefined when the session names no offer: a sale of something else on the same
 * Stripe account. The amount is the subtotal, the price before the discounts and taxes Checkout may apply.
 */
export function paymentOfCheckoutSession(session: Stripe.Checkout.Session, merchantId: string): ProviderPayment | undefined {
  const offerId = session.metadata?.[OFFER_METADATA_KEY];
  if (offerId === undefined) return undefined;
  return checkedPayment(`Checkout Session ${session.id}`, {
    payment_id: session.id,
    status: session.payment_status === 'paid' ? PAYMENT_CONFIRMED : PAYMENT_PENDING,
    customer_email: session.customer_details?.email ?? session.customer_email ?? '',
    offer_id: offerId,
    merchant_id: merchantId,
    amount_cents: session.amount_subtotal ?? -1,
    currency: session.currency,
  });
}

/**
 * A PaymentIntent made without Checkout (the Payment Element), keyed by its id (pi_…); undefined when it names no
 * offer. The e-mail is its receipt_email, else metadata.customer_email.
 */
export function paymentOfIntent(intent: Stripe.PaymentIntent, merchantId: string): ProviderPayment | undefined {
  const offerId = intent.metadata?.[OFFER_METADATA_KEY];
  if (offerId === undefined) return undefined;
  const succeeded = intent.status === 'succeeded';
  return checkedPayment(`PaymentIntent ${intent.id}`, {
    payment_id: intent.id,
    status: succeeded ? PAYMENT_CONFIRMED : PAYMENT_PENDING,
    customer_email: intent.receipt_email ?? intent.metadata.customer_email ?? '',
    offer_id: offerId,
    merchant_id: merchantId,
    amount_cents: succeeded ? intent.amount_received : intent.amount,
    currency: intent.currency,
  });
}

/**
 * Refuses what the service cannot sell as it stands: an offer it does not have (422), an amount or currency other
 * than the offer's price (422), a field it cannot read (400). Nothing is recorded of a refused payment.
 */
function checkedPayment(what: string, payment: ProviderPayment & { currency: string | null }): ProviderPayment {
  const { currency, ...recorded } = payment;
  const paymentId = recorded.payment_id;
  if (!isTierId(recorded.offer_id)) {
    throw new SvcError(
      'payment_mismatch',
      `the ${what} is for offer_id ${JSON.stringify(recorded.offer_id.slice(0, 64))}, which this service does not sell`,
      {
        remedy: `Set metadata.${OFFER_METADATA_KEY} to one of ${TIER_IDS.join(', ')} when creating the checkout; refund this payment.`,
        extensions: { payment_id: paymentId },
      },
    );
  }
  const price = TIERS[recorded.offer_id].price_cents;
  const amountFits = price === null ? recorded.amount_cents >= 1 : recorded.amount_cents === price;
  if (currency?.toLowerCase() !== STRIPE_CURRENCY || !amountFits) {
    const wanted = price === null ? `at least 1 ${STRIPE_CURRENCY} cent` : `${price} ${STRIPE_CURRENCY} cents`;
    throw new SvcError(
      'payment_mismatch',
      `the ${what} is ${recorded.amount_cents} ${currency ?? '(no currency)'} cents, but ${recorded.offer_id} costs ${wanted}`,
      {
        remedy: `Charge the offer's price in ${STRIPE_CURRENCY.toUpperCase()} (docs/operations.md "Payments with Stripe"); refund this payment.`,
        extensions: { payment_id: paymentId, offer_id: recorded.offer_id },
      },
    );
  }
  if (!providerPayment.Check(recorded)) {
    const error = [...providerPayment.Errors(recorded)][0];
    const field = error?.path.slice(1) === 'customer_email' ? 'customer e-mail' : (error?.path.slice(1) ?? 'payment');
    throw new SvcError('invalid_request', `the ${what} has no usable ${field}: ${error?.message ?? 'is invalid'}`, {
      remedy: "Collect the customer's e-mail at checkout (Checkout does by default; a PaymentIntent needs receipt_email).",
      extensions: { payment_id: paymentId },
    });
  }
  return recorded;
}

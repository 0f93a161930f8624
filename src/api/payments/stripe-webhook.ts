// Stripe's own webhook (docs/api.md "Payments with Stripe"): deliveries signed in `Stripe-Signature` with the
// endpoint's signing secret, checked by the official package (its HMAC, its header parsing, its tolerance), and the
// three events that say a payment of this service is paid. Every other event is acknowledged and ignored.
import type Stripe from 'stripe';
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { ProviderEvent, ProviderPayment, ProviderWebhook } from '../context.js';
import { OFFER_METADATA_KEY, paymentOfCheckoutSession, paymentOfIntent } from './stripe-payments.js';
import { WEBHOOK_TOLERANCE_SECONDS } from './webhook-signature.js';

/** The header Stripe signs its deliveries in (lowercase: Node's request.headers). */
export const STRIPE_SIGNATURE_HEADER = 'stripe-signature';
/** The events to select for the endpoint in Stripe's dashboard; the service ignores any other. */
export const STRIPE_CONFIRMING_EVENTS = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'payment_intent.succeeded',
] as const;

const SIGNATURE_REMEDY =
  "Stripe signs with the endpoint's signing secret: SVC_STRIPE_WEBHOOK_SECRET must be that endpoint's whsec_… secret.";
/** The messages of the package's StripeSignatureVerificationError that the service answers in its own words. */
const STALE_MESSAGE = 'Timestamp outside the tolerance zone';
const MALFORMED_MESSAGES = ['Unable to extract timestamp and signatures from header', 'No signatures found with expected scheme'];

export function createStripeWebhook(deps: {
  stripe: Stripe;
  webhookSecret: string;
  merchantId: string;
  /** Whether a Checkout Session made this PaymentIntent (asked of Stripe): that payment is the session's. */
  paidThroughCheckout: (intentId: string) => Promise<boolean>;
}): ProviderWebhook {
  const { stripe, webhookSecret, merchantId, paidThroughCheckout } = deps;
  return {
    signatureHeader: STRIPE_SIGNATURE_HEADER,

    verify(rawBody, signature, nowMs) {
      if (signature === undefined || signature === '') throw signatureError('the Stripe-Signature header is missing');
      if (Array.isArray(signature)) throw signatureError('send exactly one Stripe-Signature header');
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret, WEBHOOK_TOLERANCE_SECONDS, undefined, nowMs);
      } catch (error) {
        // The package's own messages name its integration mistakes; the sender gets what was wrong with its delivery.
        const message = (error as Error).message;
        if (message === STALE_MESSAGE)
          throw signatureError(`the Stripe-Signature timestamp is more than ${WEBHOOK_TOLERANCE_SECONDS} s old`);
        if (MALFORMED_MESSAGES.includes(message))
          throw signatureError('the Stripe-Signature header must be "t=<unix seconds>,v1=<hex HMAC-SHA256>"');
        throw signatureError('the Stripe-Signature does not match the body');
      }
      return { id: event.id, type: event.type, payload: event };
    },

    async paymentOf(received: ProviderEvent): Promise<ProviderPayment | undefined> {
      const event = received.payload as Stripe.Event;
      switch (event.type) {
        case 'checkout.session.completed':
        case 'checkout.session.async_payment_succeeded': {
          const payment = paymentOfCheckoutSession(event.data.object, merchantId);
          // Completed but not paid yet (a bank debit, a voucher): its async_payment_succeeded confirms it later.
          return payment?.status === PAYMENT_CONFIRMED ? payment : undefined;
        }
        case 'payment_intent.succeeded': {
          const intent = event.data.object;
          // A payment made through Checkout is confirmed once, by its session's event, under the session's id: were
          // its PaymentIntent recorded too, one payment would be two (and a wallet fund credited twice).
          if (intent.metadata?.[OFFER_METADATA_KEY] === undefined || (await paidThroughCheckout(intent.id))) return undefined;
          const payment = paymentOfIntent(intent, merchantId);
          return payment?.status === PAYMENT_CONFIRMED ? payment : undefined;
        }
        default:
          return undefined;
      }
    },
  };
}

function signatureError(message: string): SvcError {
  return new SvcError('unauthorized', message, { remedy: SIGNATURE_REMEDY });
}

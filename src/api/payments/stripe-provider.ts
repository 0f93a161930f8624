// The Stripe payment provider (SVC_PAYMENT_PROVIDER=stripe; docs/api.md "Payments with Stripe"): payments are
// looked up through the official client, at SVC_STRIPE_API_BASE (Stripe itself unless a stand-in is named), and
// confirmed by Stripe's signed webhook (stripe-webhook.ts). Loaded only when configured: the package is large.
import type Stripe from 'stripe';
import { SvcError } from '../../contract/errors.js';
import type { PaymentProvider, ProviderPayment } from '../context.js';
import type { StripeConfig } from './provider-config.js';
import { OFFER_METADATA_KEY, paymentOfCheckoutSession, paymentOfIntent } from './stripe-payments.js';
import { createStripeWebhook } from './stripe-webhook.js';

/** A lookup runs inside a client's request (activate, issue-token): it gives up well before a client would. */
const STRIPE_TIMEOUT_MS = 10_000;
/** The client's own retry of a failed connection or a 5xx, after its backoff (0.5 s to 1 s). */
const STRIPE_RETRIES = 1;
const RETRY_AFTER_SECONDS = 5;
/** The ids a payer can hold: the Checkout Session's (cs_…) and a PaymentIntent's made without Checkout (pi_…). */
const CHECKOUT_SESSION_ID = /^cs_(test|live)_[A-Za-z0-9]+$/;
const PAYMENT_INTENT_ID = /^pi_[A-Za-z0-9]+$/;

export async function createStripeProvider(config: StripeConfig, merchantId: string): Promise<PaymentProvider> {
  const { default: StripeClient } = await import('stripe');
  const stripe = new StripeClient(config.secretKey, {
    ...config.apiBase,
    timeout: STRIPE_TIMEOUT_MS,
    maxNetworkRetries: STRIPE_RETRIES,
    telemetry: false,
    appInfo: { name: 'svc-api' },
  });

  /** Stripe's answer, or null for its 404 (resource_missing); any other failure is a 503 that changed nothing. */
  async function ask<T>(call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof StripeClient.errors.StripeInvalidRequestError && error.statusCode === 404) return null;
      throw providerUnavailable(error, StripeClient.errors);
    }
  }

  async function paidThroughCheckout(intentId: string): Promise<boolean> {
    const sessions = await ask(() => stripe.checkout.sessions.list({ payment_intent: intentId, limit: 1 }));
    return (sessions?.data.length ?? 0) > 0;
  }

  async function lookupPayment(paymentId: string): Promise<ProviderPayment | null> {
    if (CHECKOUT_SESSION_ID.test(paymentId)) {
      const session = await ask(() => stripe.checkout.sessions.retrieve(paymentId));
      return (session && paymentOfCheckoutSession(session, merchantId)) ?? null;
    }
    if (!PAYMENT_INTENT_ID.test(paymentId)) return null;
    const intent = await ask(() => stripe.paymentIntents.retrieve(paymentId));
    if (intent === null || intent.metadata?.[OFFER_METADATA_KEY] === undefined) return null;
    if (await paidThroughCheckout(intent.id)) {
      throw new SvcError('payment_not_found', `${paymentId} was paid through a Checkout Session, which is the payment's id`, {
        remedy: "Use the Checkout Session id (cs_…) from the checkout's success page as the payment id.",
      });
    }
    return paymentOfIntent(intent, merchantId) ?? null;
  }

  return {
    lookupPayment,
    webhook: createStripeWebhook({ stripe, webhookSecret: config.webhookSecret, merchantId, paidThroughCheckout }),
  };
}

/**
 * The client's answer when Stripe could not be asked. Its cause is logged, so it says what failed without the
 * client's own message of an authentication failure (which repeats the key's last characters).
 */
function providerUnavailable(error: unknown, errors: typeof Stripe.errors): SvcError {
  let cause: string;
  if (error instanceof errors.StripeAuthenticationError) cause = 'Stripe refused SVC_STRIPE_SECRET_KEY (authentication failed)';
  else if (error instanceof errors.StripePermissionError) cause = 'SVC_STRIPE_SECRET_KEY may not read Checkout Sessions or PaymentIntents';
  else if (error instanceof errors.StripeError)
    cause = `Stripe answered ${error.statusCode ?? 'nothing'} (${error.type}): ${error.message}`;
  else cause = `Stripe could not be asked: ${(error as Error).message}`;
  return new SvcError('service_unavailable', 'the payment provider could not be asked about this payment; nothing was changed', {
    retryAfterSeconds: RETRY_AFTER_SECONDS,
    remedy: 'Retry in a few seconds.',
    cause: new Error(cause),
  });
}

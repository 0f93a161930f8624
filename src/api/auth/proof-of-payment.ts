// Who may get a JWT (docs/api.md "issue-token: proof of payment"). The spec's body (status, offer_id,
// customer_email, merchant_id) names a customer but proves nothing: anyone can know an e-mail. So the service also
// needs proof that the caller is the payer: the provider's payment id, which only the payer got at checkout (and
// already passes to activate), or the credential of a node that enrollment proved paid for.
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import { normalizeEmail } from '../../contract/email.js';
import { SvcError } from '../../contract/errors.js';
import type { IssueTokenRequest } from '../../contract/schemas.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import type { PaymentRecords } from '../payments/payment-records.js';
import { PAYMENT_RETRY_AFTER_SECONDS } from '../paygate/sessions.js';

/** The payment a token is issued against (recorded with its jti). */
export interface ProvenPayment {
  payment_id: string;
}

/**
 * The payment behind `payment_id`, when it is CONFIRMED and was made by this e-mail for this offer and merchant.
 * An unknown payment id and a payment of another e-mail get the same answer, word for word: a stranger who knows an
 * e-mail learns nothing about whether it has paid, whatever payment ids they guess.
 */
export async function paymentProvingIssue(payments: PaymentRecords, input: IssueTokenRequest & { payment_id: string }): Promise<ProvenPayment> {
  const payment = await payments.resolve(input.payment_id);
  if (payment === undefined || payment.customer_email !== normalizeEmail(input.customer_email)) {
    throw new SvcError('payment_not_found', 'no payment with this payment_id was made with this customer_email', {
      remedy: 'Use the e-mail you paid with and the payment id the payment provider gave you at checkout.',
    });
  }
  if (payment.status !== PAYMENT_CONFIRMED) {
    throw new SvcError('payment_not_confirmed', `the payment is ${payment.status}, not yet ${PAYMENT_CONFIRMED}`, {
      retryAfterSeconds: PAYMENT_RETRY_AFTER_SECONDS,
      remedy: 'Wait for the payment provider to confirm the payment, then ask again.',
    });
  }
  if (payment.offer_id !== input.offer_id || payment.merchant_id !== input.merchant_id) {
    const what = payment.offer_id !== input.offer_id ? 'offer' : 'merchant';
    throw new SvcError('payment_mismatch', `the payment was made for another ${what} than asked`, {
      remedy: `Ask for the offer the payment was made for (offer_id ${payment.offer_id}).`,
      extensions: { payment_offer_id: payment.offer_id },
    });
  }
  return payment;
}

/** An enrolled node signs its own user in for its own tier: enrollment proved the payment (its session's). */
export function nodeProvingIssue(node: EnrolledNode, input: IssueTokenRequest): ProvenPayment {
  if (normalizeEmail(input.customer_email) !== node.user_id || input.offer_id !== node.tier_id) {
    throw new SvcError('forbidden', `this node is enrolled for ${node.user_id} and the offer ${node.tier_id}`, {
      remedy: 'Sign in as the node\'s own user and offer (swarm-node login with no options), or give a payment id.',
    });
  }
  return { payment_id: node.payment_id };
}

export function paymentIdRequired(): SvcError {
  return new SvcError('invalid_request', 'payment_id is required: the payment id the payment provider gave at checkout proves the payment', {
    remedy: 'Send payment_id with the checkout e-mail and offer, or sign in from an enrolled node with its node credential.',
    extensions: { errors: [{ path: '/payment_id', message: 'is required' }] },
  });
}

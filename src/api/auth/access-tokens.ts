// spec §4, §5: POST /v1/auth/issue-token (with proof of payment: ./proof-of-payment.ts) and POST /v1/auth/verify.
import { PAYMENT_CONFIRMED, PAYMENT_RAIL } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { normalizeEmail, type IssueTokenRequest, type IssueTokenResponse, type VerifyResponse } from '../../contract/schemas.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import type { EnrolledNode } from '../nodes/credentials.js';
import { createPaymentRecords } from '../payments/payment-records.js';
import { InvalidTokenError } from './tokens.js';
import { nodeProvingIssue, paymentIdRequired, paymentProvingIssue, type ProvenPayment } from './proof-of-payment.js';

export interface AccessTokens {
  /** `node`: the enrolled node calling with its credential (checked by the route's auth), if it is one. */
  issue(input: IssueTokenRequest, node: EnrolledNode | undefined): Promise<IssueTokenResponse>;
  verify(token: string): Promise<VerifyResponse>;
}

export function createAccessTokens(ctx: ServiceContext): AccessTokens {
  const payments = createPaymentRecords(ctx);

  return {
    async issue(input, node) {
      // DECISIONS.md: the body's status is the client's claim; only the service's own records decide.
      if (input.status !== PAYMENT_CONFIRMED) {
        throw new SvcError('payment_not_confirmed', `issue-token needs a payment whose status is ${PAYMENT_CONFIRMED}`, {
          remedy: `Wait until the payment provider confirms the payment, then ask again with status ${PAYMENT_CONFIRMED}.`,
        });
      }
      if (input.merchant_id !== ctx.merchantId) {
        throw new SvcError('payment_mismatch', 'merchant_id is not the merchant of this service');
      }
      let proof: ProvenPayment;
      if (node !== undefined) {
        proof = nodeProvingIssue(node, input);
      } else if (input.payment_id !== undefined) {
        proof = await paymentProvingIssue(payments, { ...input, payment_id: input.payment_id });
      } else {
        throw paymentIdRequired();
      }
      const issued = await ctx.tokens.issue(normalizeEmail(input.customer_email), input.offer_id);
      const { claims } = issued;
      await ctx.store.db
        .insertInto('issued_tokens')
        .values({ jti: claims.jti!, sub: claims.sub, tier: claims.tier, kid: issued.kid, payment_id: proof.payment_id, issued_at: claims.iat * 1000, expires_at: claims.exp * 1000 })
        .execute();
      return { jwtToken: issued.token, token_type: 'Bearer', expires_at: isoTime(claims.exp * 1000), tier: claims.tier };
    },

    async verify(token) {
      try {
        const claims = await ctx.tokens.verify(token);
        const tier = claims.tier as TierId;
        return {
          valid: true,
          tier_key: tier,
          docs_sections: [...TIERS[tier].docs_sections],
          payment_rail: PAYMENT_RAIL,
          sub: claims.sub,
          expires_at: isoTime(claims.exp * 1000),
        };
      } catch (error) {
        // Like OAuth token introspection: an unusable token is an answer, not an error.
        if (error instanceof InvalidTokenError) return { valid: false, reason: error.reason };
        throw error;
      }
    },
  };
}

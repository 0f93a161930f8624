// spec §4, §5: POST /v1/auth/issue-token and POST /v1/auth/verify, and the sign-in around them (docs/api.md
// "Sign-in: a verified inbox"). A token is issued only to whoever proved the inbox of customer_email (the code
// mailed to it: email-codes.ts), for an offer that address has a CONFIRMED payment for. A payment names an address
// and credits it; it never signs anyone in, and neither does a node's credential.
import { PAYMENT_CONFIRMED, PAYMENT_RAIL } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { normalizeEmail, type IssueTokenRequest, type IssueTokenResponse, type VerifyResponse } from '../../contract/schemas.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import { isoTime } from '../../lib/clock.js';
import type { ServiceContext } from '../context.js';
import { runInBackground } from '../context.js';
import { newClientSignInMail, type ClientSeen } from '../mail/messages.js';
import { createEmailCodes, invalidCode, type EmailCodes } from './email-codes.js';
import { entitlingPayment } from './entitlement.js';
import { createPaymentRecords } from '../payments/payment-records.js';
import { InvalidTokenError } from './tokens.js';

export interface AccessTokens {
  issue(input: IssueTokenRequest, client: ClientSeen): Promise<IssueTokenResponse>;
  /**
   * The token of an inbox proven just now (`challengeId`, spent here once; none only for a caller that proved the
   * inbox otherwise, as tests do with the service in their hands): entitled, issued, recorded and audited.
   */
  signInProvenInbox(email: string, offerId: TierId, client: ClientSeen, challengeId?: string): Promise<IssueTokenResponse>;
  verify(token: string): Promise<VerifyResponse>;
  readonly emailCodes: EmailCodes;
}

export function createAccessTokens(ctx: ServiceContext): AccessTokens {
  const emailCodes = createEmailCodes(ctx.store, ctx.clock, ctx.mailer, ctx.secrets.jwtKey, ctx.signInCodesPerClient);
  const payments = createPaymentRecords(ctx);

  async function signInProvenInbox(email: string, offerId: TierId, client: ClientSeen, challengeId?: string): Promise<IssueTokenResponse> {
    const payment = await entitlingPayment(ctx.store, { email, offerId, merchantId: ctx.merchantId });
    const now = ctx.clock.now();
    const { issued, firstSignIn, newClient } = await ctx.store.transaction(async () => {
      if (challengeId !== undefined && !(await emailCodes.use(challengeId))) throw invalidCode();
      const earlier = await ctx.store.db
        .selectFrom('issued_tokens')
        .select(['client_address', 'user_agent'])
        .where('sub', '=', email)
        .where('auth_time', 'is not', null)
        .execute();
      const issued = await ctx.tokens.issue(email, offerId, Math.floor(now / 1000));
      const { claims } = issued;
      await ctx.store.db
        .insertInto('issued_tokens')
        .values({
          jti: claims.jti!,
          sub: claims.sub,
          tier: claims.tier,
          kid: issued.kid,
          payment_id: payment.payment_id,
          issued_at: now,
          expires_at: claims.exp * 1000,
          auth_time: now,
          client_address: client.client_address,
          user_agent: client.user_agent,
          revoked_at: null,
        })
        .execute();
      await ctx.audit.record(email, 'sign_in', client, { tier: claims.tier, jti: claims.jti });
      const newClient = !earlier.some((row) => row.client_address === client.client_address && row.user_agent === client.user_agent);
      return { issued, firstSignIn: earlier.length === 0, newClient };
    });
    // The first sign-in is the code's own mail; after it, a client not seen before is told of.
    if (newClient && !firstSignIn) runInBackground(ctx, ctx.mailer.send(newClientSignInMail(email, now, client)));
    const { claims } = issued;
    return { jwtToken: issued.token, token_type: 'Bearer', expires_at: isoTime(claims.exp * 1000), tier: claims.tier };
  }

  return {
    emailCodes,

    async issue(input, client) {
      // docs/api.md "POST /v1/auth/issue-token": the body's status is the client's claim; only the service's own
      // records decide.
      if (input.status !== PAYMENT_CONFIRMED) {
        throw new SvcError('payment_not_confirmed', `issue-token needs a payment whose status is ${PAYMENT_CONFIRMED}`, {
          remedy: `Wait until the payment provider confirms the payment, then ask again with status ${PAYMENT_CONFIRMED}.`,
        });
      }
      if (input.merchant_id !== ctx.merchantId) throw new SvcError('payment_mismatch', 'merchant_id is not the merchant of this service');
      if (input.challenge_id === undefined || input.code === undefined)
        throw inboxProofRequired(input.challenge_id === undefined ? 'challenge_id' : 'code');
      const email = normalizeEmail(input.customer_email);
      // The inbox first: nothing about the address (whether it paid, for what) is said to a caller who has not proven it.
      await emailCodes.check(input.challenge_id, email, input.code);
      // A payment whose webhook was lost: asked of the provider now, so a paid user is never stranded
      // (docs/decisions/0007-payment-provider.md).
      if (input.payment_id !== undefined) {
        const named = await payments.resolve(input.payment_id);
        if (named === undefined || named.customer_email !== email) {
          throw new SvcError(
            'payment_not_found',
            `no payment ${input.payment_id} of ${email} is known to the service or the payment provider`,
            {
              remedy: 'Give the payment id of your own checkout, or leave payment_id out: confirmed payments are known to the service.',
            },
          );
        }
      }
      return signInProvenInbox(email, input.offer_id, client, input.challenge_id);
    },

    signInProvenInbox,

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

function inboxProofRequired(missing: 'challenge_id' | 'code'): SvcError {
  return new SvcError(
    'invalid_request',
    'issue-token needs the proof that you read customer_email: the challenge_id and the code mailed to it',
    {
      remedy:
        'Ask for a code with POST /v1/auth/email-code {"email": …}, then send its challenge_id and the code from the mail (both at once: swarm-node login).',
      extensions: { errors: [{ path: `/${missing}`, message: 'is required' }] },
    },
  );
}

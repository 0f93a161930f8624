// A signed-in user's JWT for tests that drive the service in their own process: the sign-in after the inbox was
// proven, through the service's own code (access-tokens.ts), for a payment recorded as the provider's webhook
// records it. Tests about the sign-in itself go over HTTP with a mailed code (funnel.ts).
import { PAYMENT_CONFIRMED } from '../../src/contract/claims.js';
import type { TierId } from '../../src/contract/tiers.js';
import { TIERS } from '../../src/contract/tiers.js';
import { createAccessTokens } from '../../src/api/auth/access-tokens.js';
import { createPaymentRecords } from '../../src/api/payments/payment-records.js';
import type { TestService } from './svc-api.js';

let paid = 0;

export async function mintToken(
  service: Pick<TestService, 'ctx'>,
  email: string,
  tier: TierId = 'svc_starter_agents',
): Promise<{ token: string }> {
  const { ctx } = service;
  paid += 1;
  await createPaymentRecords(ctx).recordProviderWord({
    payment_id: `pay_test_${process.pid}_${paid}_${Date.now()}`,
    status: PAYMENT_CONFIRMED,
    customer_email: email,
    offer_id: tier,
    merchant_id: ctx.merchantId,
    amount_cents: TIERS[tier].credits_wallet ? 1 : 0,
  });
  const issued = await createAccessTokens(ctx).signInProvenInbox(email.toLowerCase(), tier, {
    client_address: '127.0.0.1',
    user_agent: 'vitest',
  });
  return { token: issued.jwtToken };
}

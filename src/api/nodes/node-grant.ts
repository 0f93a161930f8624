// One more node for a signed-in user (POST /v1/swarm/nodes/deploy-token), the way a runner registration token comes
// from the API with the user's own credential: the JWT already proved the payment when it was issued, so the
// deploy token carries that payment on to the node it enrolls (issue-token from that node rests on it).
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import type { Store } from '../store/store.js';
import type { DeployTokenOwner } from '../paygate/deploy-tokens.js';

export function createNodeGrant(store: Store): (claims: AccessTokenClaims) => Promise<DeployTokenOwner> {
  const issuedFor = (jti: string, sub: string) =>
    store.db.selectFrom('issued_tokens').select('payment_id').where('jti', '=', jti).where('sub', '=', sub).executeTakeFirst();
  // A token issued elsewhere (no jti of ours): the user's latest confirmed payment for the tier proves the same.
  const latestPayment = (email: string, offerId: string) =>
    store.db
      .selectFrom('payments')
      .select('payment_id')
      .where('customer_email', '=', email)
      .where('offer_id', '=', offerId)
      .where('status', '=', PAYMENT_CONFIRMED)
      .orderBy('confirmed_at', 'desc')
      .limit(1)
      .executeTakeFirst();
  return async (claims) => {
    const tier = TIERS[claims.tier as TierId];
    if (tier === undefined || !tier.node_install) {
      throw new SvcError('forbidden', `a ${claims.tier} token installs no node: that payment only tops up the wallet`, {
        remedy: 'Sign in with the payment of a tier that includes execution (dev_portal_execution_billing or svc_starter_agents).',
      });
    }
    const payment =
      (claims.jti === undefined ? undefined : await issuedFor(claims.jti, claims.sub)) ?? (await latestPayment(claims.sub, claims.tier));
    if (payment === undefined) {
      throw new SvcError('forbidden', `no confirmed ${claims.tier} payment of ${claims.sub} backs this token`, {
        remedy: 'Sign in with the payment id of your checkout (swarm-node login --payment <id>), then ask again.',
      });
    }
    return { user_id: claims.sub, tier_id: claims.tier, payment_id: payment.payment_id };
  };
}

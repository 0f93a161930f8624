// One more node for a signed-in user (POST /v1/swarm/nodes/deploy-token, with a recent sign-in), the way a runner
// registration token comes from the API with the user's own credential: the token was issued for a CONFIRMED
// payment of its tier (auth/entitlement.ts), and the deploy token carries that payment on to the node it enrolls.
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import type { Store } from '../store/store.js';
import type { DeployTokenOwner } from '../paygate/deploy-tokens.js';

export function createNodeGrant(store: Store): (claims: AccessTokenClaims) => Promise<DeployTokenOwner> {
  const issuedFor = (jti: string, sub: string) =>
    store.db.selectFrom('issued_tokens').select('payment_id').where('jti', '=', jti).where('sub', '=', sub).executeTakeFirst();
  return async (claims) => {
    const tier = TIERS[claims.tier as TierId];
    if (tier === undefined || !tier.node_install) {
      throw new SvcError('forbidden', `a ${claims.tier} token installs no node: that payment only tops up the wallet`, {
        remedy: `Sign in for an offer that includes execution: swarm-node login --email ${claims.sub} --offer svc_starter_agents (or --offer dev_portal_execution_billing).`,
      });
    }
    // Every token the service accepts was recorded at issue with the payment that entitled it (tokens.ts).
    const payment = claims.jti === undefined ? undefined : await issuedFor(claims.jti, claims.sub);
    if (payment === undefined) throw new SvcError('unauthorized', 'the access token was not issued by this service');
    return { user_id: claims.sub, tier_id: claims.tier, payment_id: payment.payment_id };
  };
}

// One more node for a signed-in user (POST /v1/swarm/nodes/deploy-token), the way a runner registration token comes
// from the API with the user's own credential: the JWT already proved the payment when it was issued, so the
// deploy token carries that payment on to the node it enrolls (issue-token from that node rests on it).
import { PAYMENT_CONFIRMED } from '../../contract/claims.js';
import type { AccessTokenClaims } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import { TIERS, type TierId } from '../../contract/tiers.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { DeployTokenOwner } from '../paygate/deploy-tokens.js';

export function createNodeGrant(db: SqliteDatabase): (claims: AccessTokenClaims) => DeployTokenOwner {
  const issuedFor = db.prepare<[string, string], { payment_id: string }>('SELECT payment_id FROM issued_tokens WHERE jti = ? AND sub = ?');
  // A token issued elsewhere (no jti of ours): the user's latest confirmed payment for the tier proves the same.
  const latestPayment = db.prepare<[string, string, string], { payment_id: string }>(
    'SELECT payment_id FROM payments WHERE customer_email = ? AND offer_id = ? AND status = ? ORDER BY confirmed_at DESC LIMIT 1',
  );
  return (claims) => {
    const tier = TIERS[claims.tier as TierId];
    if (tier === undefined || !tier.node_install) {
      throw new SvcError('forbidden', `a ${claims.tier} token installs no node: that payment only tops up the wallet`, {
        remedy: 'Sign in with the payment of a tier that includes execution (dev_portal_execution_billing or svc_starter_agents).',
      });
    }
    const payment =
      (claims.jti === undefined ? undefined : issuedFor.get(claims.jti, claims.sub)) ?? latestPayment.get(claims.sub, claims.tier, PAYMENT_CONFIRMED);
    if (payment === undefined) {
      throw new SvcError('forbidden', `no confirmed ${claims.tier} payment of ${claims.sub} backs this token`, {
        remedy: 'Sign in with the payment id of your checkout (swarm-node login --payment <id>), then ask again.',
      });
    }
    return { user_id: claims.sub, tier_id: claims.tier, payment_id: payment.payment_id };
  };
}

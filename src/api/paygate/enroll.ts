// An addition (docs/api.md "Additions the flow needs"): POST /v1/swarm/nodes/enroll. The node install presents its
// deploy token once; the token is consumed and the node recorded in one transaction, and the node gets its own
// credential (shown once).
import { randomUUID } from 'node:crypto';
import { DEPLOY_MODE, INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { EnrollResponse } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import { createDeployTokens } from './deploy-tokens.js';
import { hashNodeCredential, newNodeCredential } from '../nodes/credentials.js';

export interface NodeEnrollment {
  /** Enrolls a node with the deploy token; 401 deploy_token_invalid without saying why, never echoing it. */
  enroll(deployToken: string | undefined, options?: { ephemeral?: boolean }): Promise<EnrollResponse>;
}

export function invalidDeployToken(): SvcError {
  return new SvcError('deploy_token_invalid', 'the deploy token is unknown, expired, revoked or already used');
}

export function createNodeEnrollment(store: Store, clock: Clock): NodeEnrollment {
  const deployTokens = createDeployTokens(store, clock);

  const enroll = (deployToken: string | undefined, options: { ephemeral?: boolean } = {}): Promise<EnrollResponse> =>
    store.transaction(async () => {
      if (deployToken === undefined) throw invalidDeployToken();
      const consumed = await deployTokens.consume(deployToken);
      if (consumed === undefined) throw invalidDeployToken();
      if (consumed.session_id !== null) {
        const session = await store.db
          .selectFrom('sessions')
          .select('status')
          .where('session_id', '=', consumed.session_id)
          .executeTakeFirst();
        if (session?.status !== 'active') throw invalidDeployToken();
      }
      const nodeId = randomUUID();
      const nodeCredential = newNodeCredential();
      await store.db
        .insertInto('nodes')
        .values({
          node_id: nodeId,
          session_id: consumed.session_id,
          user_id: consumed.user_id,
          tier_id: consumed.tier_id,
          payment_id: consumed.payment_id,
          enrolled_at: clock.now(),
          credential_hash: hashNodeCredential(nodeCredential),
          ephemeral: options.ephemeral === true ? 1 : 0,
        })
        .execute();
      return {
        node_id: nodeId,
        node_credential: nodeCredential,
        user_id: consumed.user_id,
        tier_id: consumed.tier_id,
        install_path: INSTALL_PATH,
        deploy_mode: DEPLOY_MODE,
        ...(options.ephemeral === true ? { ephemeral: true as const } : {}),
      };
    });

  return { enroll };
}

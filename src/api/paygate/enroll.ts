// DECISIONS.md addition: POST /v1/swarm/nodes/enroll. The node install presents its deploy token once; the
// token is consumed and the node recorded in one transaction, and the node gets its own credential (shown once).
import { randomUUID } from 'node:crypto';
import { DEPLOY_MODE, INSTALL_PATH } from '../../contract/claims.js';
import { SvcError } from '../../contract/errors.js';
import type { EnrollResponse } from '../../contract/schemas.js';
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import { createDeployTokens } from './deploy-tokens.js';
import { hashNodeCredential, newNodeCredential } from '../nodes/credentials.js';

export interface NodeEnrollment {
  /** Enrolls a node with the deploy token; 401 deploy_token_invalid without saying why, never echoing it. */
  enroll(deployToken: string | undefined): EnrollResponse;
}

export function invalidDeployToken(): SvcError {
  return new SvcError('deploy_token_invalid', 'the deploy token is unknown, expired, revoked or already used');
}

export function createNodeEnrollment(db: SqliteDatabase, clock: Clock): NodeEnrollment {
  const deployTokens = createDeployTokens(db, clock);
  const selectSession = db.prepare<[string], { status: string }>('SELECT status FROM sessions WHERE session_id = ?');
  const insertNode = db.prepare(
    'INSERT INTO nodes (node_id, session_id, user_id, tier_id, payment_id, enrolled_at, credential_hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );

  const enroll = db.transaction((deployToken: string | undefined): EnrollResponse => {
    if (deployToken === undefined) throw invalidDeployToken();
    const consumed = deployTokens.consume(deployToken);
    if (consumed === undefined) throw invalidDeployToken();
    if (consumed.session_id !== null && selectSession.get(consumed.session_id)?.status !== 'active') throw invalidDeployToken();
    const nodeId = randomUUID();
    const nodeCredential = newNodeCredential();
    insertNode.run(nodeId, consumed.session_id, consumed.user_id, consumed.tier_id, consumed.payment_id, clock.now(), hashNodeCredential(nodeCredential));
    return {
      node_id: nodeId,
      node_credential: nodeCredential,
      user_id: consumed.user_id,
      tier_id: consumed.tier_id,
      install_path: INSTALL_PATH,
      deploy_mode: DEPLOY_MODE,
    };
  });

  return { enroll };
}

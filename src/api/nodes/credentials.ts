// The node credential (docs/api.md "Node credential"): enrollment with the deploy token gives the node a secret of
// its own, long-lived and random, like a GitHub runner's or Buildkite agent's token. The node keeps it 0600; the
// service keeps only its SHA-256, so a copy of the database authenticates no node. Enrollment proved payment, so the
// credential stands for it later (issue-token without a payment id).
import { createHash, randomBytes } from 'node:crypto';
import { SvcError } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

/** A prefix that says what the secret is, so a leaked one is recognisable (secret scanners, logs). */
export const NODE_CREDENTIAL_PREFIX = 'svcn_';
const NODE_CREDENTIAL_PATTERN = /^svcn_[A-Za-z0-9_-]{43}$/;

export interface EnrolledNode {
  node_id: string;
  /** The pay-gate session whose activation enrolled it; null for a node a signed-in user added. */
  session_id: string | null;
  user_id: string;
  tier_id: string;
  /** The payment its enrollment proved: its session's, or the one its user's JWT was issued for. */
  payment_id: string;
}

export function newNodeCredential(): string {
  return `${NODE_CREDENTIAL_PREFIX}${randomBytes(32).toString('base64url')}`;
}

export function hashNodeCredential(credential: string): string {
  return createHash('sha256').update(credential, 'utf8').digest('hex');
}

export function isNodeCredential(bearer: string): boolean {
  return bearer.startsWith(NODE_CREDENTIAL_PREFIX);
}

export interface NodeAuthenticator {
  /** The node this credential belongs to; 401 otherwise, one message for every cause, never echoing it. */
  authenticate(credential: string): EnrolledNode;
  /**
   * A new credential for the node (shown once). Until the node first uses it, the current one keeps working: a
   * rotation whose answer is lost (a network cut, a crash before the node wrote the file) locks no node out, and
   * asking again replaces the unused new one.
   */
  rotate(nodeId: string): string;
}

export function createNodeAuthenticator(db: SqliteDatabase): NodeAuthenticator {
  const select = db.prepare<{ hash: string }, EnrolledNode & { next: number }>(`
    SELECT n.node_id, n.session_id, n.user_id, n.tier_id, n.payment_id, coalesce(n.next_credential_hash = @hash, 0) AS next
    FROM nodes n
    WHERE n.credential_hash = @hash OR n.next_credential_hash = @hash`);
  // The first use of the new credential retires the old one.
  const promote = db.prepare('UPDATE nodes SET credential_hash = next_credential_hash, next_credential_hash = NULL WHERE node_id = ? AND next_credential_hash = ?');
  const setNext = db.prepare('UPDATE nodes SET next_credential_hash = ? WHERE node_id = ?');
  return {
    authenticate(credential) {
      const hash = NODE_CREDENTIAL_PATTERN.test(credential) ? hashNodeCredential(credential) : undefined;
      const found = hash === undefined ? undefined : select.get({ hash });
      if (found === undefined) {
        throw new SvcError('unauthorized', 'the node credential is unknown or was replaced', {
          remedy: 'Enroll the node again with a fresh deploy token (swarm-node activate, then swarm-node install).',
        });
      }
      const { next, ...node } = found;
      if (next === 1) promote.run(node.node_id, hash);
      return node;
    },
    rotate(nodeId) {
      const credential = newNodeCredential();
      setNext.run(hashNodeCredential(credential), nodeId);
      return credential;
    },
  };
}

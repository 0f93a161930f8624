// The node credential (docs/api.md "Node credential"): enrollment with the deploy token gives the node a secret of
// its own, long-lived and random, like a GitHub runner's or Buildkite agent's token. The node keeps it 0600; the
// service keeps only its SHA-256, so a copy of the database authenticates no node. It does the node's own work and
// nothing else (docs/api.md "Scopes"): it never becomes the user's JWT.
import { createHash, randomBytes } from 'node:crypto';
import { SvcError } from '../../contract/errors.js';
import { isoTime } from '../../lib/clock.js';
import type { Revocations } from '../auth/revocations.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';

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
  /** Enrolled to take one run, then remove itself (ephemeral.ts). */
  ephemeral: boolean;
  /** What its row said of it when it authenticated: a poll writes them only when they changed or have aged. */
  seen: NodeSeen;
}

export interface NodeSeen {
  at: number | null;
  hostname: string | null;
  name: string | null;
  version: string | null;
  /** When this instance last wrote the node's health (docs/api.md "Node health"); absent: not yet. */
  healthAt?: number;
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
  /**
   * The node this credential belongs to; 401 otherwise, one message for every cause, never echoing it; 410
   * node_removed for the credential of a node removed from its user's fleet.
   */
  authenticate(credential: string): Promise<EnrolledNode>;
  /**
   * A new credential for the user's node (shown once), asked for with the user's JWT from a recent sign-in, so a
   * thief holding a node credential (or an older JWT) cannot rotate at all (docs/api.md "Credential rotation"). It
   * works at once; its first use retires every other credential of the node, and until then the current one keeps
   * working, so an answer lost on the way locks no node out (asking again replaces the unused new one). Undefined when
   * the user has no such node (or it was removed).
   */
  replace(userId: string, nodeId: string): Promise<string | undefined>;
}

/**
 * 410, not 401: the credential is the node's own, but the node is gone for good (docs/api.md "Removing a node"). A
 * daemon stops on it instead of waiting for a credential that will never be accepted again.
 */
function nodeRemoved(nodeId: string, removedAt: number, lastSeenAt: number | null): SvcError {
  const seen = lastSeenAt === null ? 'it never polled' : `it last polled at ${isoTime(lastSeenAt)}`;
  return new SvcError(
    'node_removed',
    `node ${nodeId} was removed from its user's nodes at ${isoTime(removedAt)} (${seen}); its credential no longer works`,
    {
      extensions: { node_id: nodeId, removed_at: isoTime(removedAt) },
    },
  );
}

/** Credentials remembered at most (the oldest goes first): the nodes active at once, with room to spare. */
const REMEMBERED_CREDENTIALS = 4096;

/**
 * `revocations`: credentials found are remembered, as verified JWTs are (auth/tokens.ts), so a node's polls and
 * results cost no lookup (docs/api.md "Storage"); a removal or a rotation is learnt through the revocation log
 * (auth/revocations.ts), here at once and on every instance within a second, and forgets what was remembered of that
 * node.
 */
export function createNodeAuthenticator(store: Store, revocations?: Revocations): NodeAuthenticator {
  const remembered = new Map<string, { node: EnrolledNode; mark: number }>();
  // Every poll and every result of a node asks this: compiled once (compiled-once.ts).
  const nodeWith = compiledOnce((db, credential: { hash: string }) =>
    db
      .selectFrom('nodes')
      .select([
        'node_id',
        'session_id',
        'user_id',
        'tier_id',
        'payment_id',
        'ephemeral',
        'next_credential_hash',
        'removed_at',
        'last_seen_at',
        'offline_at',
        'hostname',
        'name',
        'version',
      ])
      .where((eb) => eb.or([eb('credential_hash', '=', credential.hash), eb('next_credential_hash', '=', credential.hash)])),
  );
  return {
    async authenticate(credential) {
      const hash = NODE_CREDENTIAL_PATTERN.test(credential) ? hashNodeCredential(credential) : undefined;
      const known = hash === undefined ? undefined : remembered.get(hash);
      if (known !== undefined && revocations?.nodeRevokedSince(known.node.node_id, known.mark) === false) return known.node;
      if (known !== undefined) remembered.delete(hash!);
      // Taken before the row is read: a revocation learnt from now on makes what is read stale.
      const mark = revocations?.nodeMark();
      const found = hash === undefined ? undefined : (await nodeWith(store.db, { hash })).rows[0];
      if (found === undefined) {
        throw new SvcError('unauthorized', 'the node credential is unknown or was replaced', {
          remedy:
            'Enroll the host anew, signed in: sudo swarm-node install --reenroll (an installed node), or swarm-node enroll --reenroll (a node run from a home).',
        });
      }
      const {
        next_credential_hash: next,
        removed_at: removedAt,
        last_seen_at: lastSeenAt,
        offline_at: offlineAt,
        ephemeral,
        hostname,
        name,
        version,
        ...enrolled
      } = found;
      // A node that said it stopped is seen as never seen: its next poll writes at once, and so is online again.
      const node: EnrolledNode = {
        ...enrolled,
        ephemeral: Number(ephemeral) === 1,
        seen: { at: offlineAt === null ? lastSeenAt : null, hostname, name, version },
      };
      if (removedAt !== null) throw nodeRemoved(node.node_id, removedAt, lastSeenAt);
      // The first use of a rotated credential retires the old one, which every instance then forgets.
      if (next === hash) {
        const retired = await store.db
          .updateTable('nodes')
          .set((eb) => ({ credential_hash: eb.ref('next_credential_hash'), next_credential_hash: null }))
          .where('node_id', '=', node.node_id)
          .where('next_credential_hash', '=', hash)
          .executeTakeFirst();
        if (retired.numUpdatedRows === 1n) await revocations?.revokeNode(node.user_id, node.node_id);
      }
      if (mark !== undefined) {
        if (remembered.size >= REMEMBERED_CREDENTIALS) remembered.delete(remembered.keys().next().value!);
        remembered.set(hash!, { node, mark });
      }
      return node;
    },
    async replace(userId, nodeId) {
      const credential = newNodeCredential();
      const replaced = await store.db
        .updateTable('nodes')
        .set({ next_credential_hash: hashNodeCredential(credential) })
        .where('node_id', '=', nodeId)
        .where('user_id', '=', userId)
        .where('removed_at', 'is', null)
        .executeTakeFirst();
      return replaced.numUpdatedRows === 1n ? credential : undefined;
    },
  };
}

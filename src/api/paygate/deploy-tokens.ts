// docs/decisions/0005-tokens.md: a deploy token is 32 random bytes in base64url, single use, valid 15 minutes, and the
// service keeps only its SHA-256, so a copy of the database installs no node. It comes from a session's activation,
// or from a signed-in user for one more node (docs/api.md "Runs on the node"); either way it names the user and
// the tier of the node it enrolls.
import { createHash, randomBytes } from 'node:crypto';
import { DEPLOY_TOKEN_LIFETIME_SECONDS } from '../../contract/claims.js';
import type { Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';

export interface IssuedDeployToken {
  token: string;
  expires_at: number;
}

export interface DeployTokens {
  /** A fresh token for the session; the session's earlier unused tokens die with it. Call inside a transaction. */
  replaceForSession(sessionId: string): Promise<IssuedDeployToken>;
  /** A fresh token for another node of the user; the user's earlier unused ones of this kind die with it. */
  replaceForUser(owner: DeployTokenOwner): Promise<IssuedDeployToken>;
  /** Marks the token used and returns whose it is, or undefined when it is unknown, expired, revoked or used. */
  consume(token: string): Promise<ConsumedDeployToken | undefined>;
  /** Whether the token would enroll now, without using it: a release download before the install enrolls. */
  usable(token: string): Promise<boolean>;
}

/** Whose node a token enrolls, for which tier, and the payment that proved it. */
export interface DeployTokenOwner {
  user_id: string;
  tier_id: string;
  payment_id: string;
}

export interface ConsumedDeployToken extends DeployTokenOwner {
  /** null: a signed-in user's token, with no session behind it. */
  session_id: string | null;
}

export function hashDeployToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function createDeployTokens(store: Store, clock: Clock): DeployTokens {
  async function issue(sessionId: string | null, owner: DeployTokenOwner, now: number): Promise<IssuedDeployToken> {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = now + DEPLOY_TOKEN_LIFETIME_SECONDS * 1000;
    await store.db
      .insertInto('deploy_tokens')
      .values({ token_hash: hashDeployToken(token), session_id: sessionId, ...owner, created_at: now, expires_at: expiresAt })
      .execute();
    return { token, expires_at: expiresAt };
  }

  return {
    async replaceForSession(sessionId) {
      const now = clock.now();
      const owner = await store.db
        .selectFrom('sessions')
        .select(['user_id', 'tier_id', 'payment_id'])
        .where('session_id', '=', sessionId)
        .executeTakeFirst();
      if (owner?.payment_id == null) throw new Error(`no activated session ${sessionId} to issue a deploy token for`);
      await store.db
        .updateTable('deploy_tokens')
        .set({ revoked_at: now })
        .where('session_id', '=', sessionId)
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .execute();
      return issue(sessionId, { ...owner, payment_id: owner.payment_id }, now);
    },
    replaceForUser(owner) {
      const now = clock.now();
      return store.transaction(async () => {
        await store.lock(`deploy-token:${owner.user_id}`);
        await store.db
          .updateTable('deploy_tokens')
          .set({ revoked_at: now })
          .where('user_id', '=', owner.user_id)
          .where('session_id', 'is', null)
          .where('used_at', 'is', null)
          .where('revoked_at', 'is', null)
          .execute();
        return issue(null, owner, now);
      });
    },
    consume(token) {
      const now = clock.now();
      // One statement decides and marks, so two enrolls racing with one token can't both see it unused.
      return store.db
        .updateTable('deploy_tokens')
        .set({ used_at: now })
        .where('token_hash', '=', hashDeployToken(token))
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', now)
        .returning(['session_id', 'user_id', 'tier_id', 'payment_id'])
        .executeTakeFirst();
    },
    async usable(token) {
      const now = clock.now();
      const row = await store.db
        .selectFrom('deploy_tokens')
        .select('token_hash')
        .where('token_hash', '=', hashDeployToken(token))
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', now)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

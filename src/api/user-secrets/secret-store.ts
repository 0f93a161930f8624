// A user's secrets (docs/api.md "Secrets"): set, listed by name and dates, removed, and opened only to hand a run's
// node the values its agent declares. Each value is sealed by the vault with the owner and the name as its context.
import { SvcError } from '../../contract/errors.js';
import { MAX_SECRETS_PER_USER, type RunSecrets, type SecretSummary } from '../../contract/secrets.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Sealed, Vault } from '../vault/vault.js';

export interface SecretStore {
  list(userId: string): Promise<SecretSummary[]>;
  /** Sets the value (a new secret, or a new value of one); call inside the transaction that audits it. */
  put(userId: string, name: string, value: string): Promise<{ created: boolean; secret: SecretSummary }>;
  remove(userId: string, name: string): Promise<boolean>;
  /** The values of those of `names` the user has; a value no key of the ring opens is left out. */
  valuesOf(userId: string, names: readonly string[]): Promise<RunSecrets>;
  /** How many values were sealed with a key the ring no longer has (removed from SVC_SECRETS_PREVIOUS_KEYS too soon). */
  unreadable(): Promise<number>;
  /** Seals again under the current key up to `limit` values an older key sealed; how many it moved. */
  reseal(limit: number): Promise<number>;
}

/** Held while a user's secrets are counted and one is added (docs/api.md "Counted limits under concurrency"). */
export const userSecretsLock = (userId: string): string => `user-secrets:${userId}`;

/** The vault's context of a value: it opens only as this user's secret of this name. */
const contextOf = (userId: string, name: string): string => `user-secret\u0000${userId}\u0000${name}`;

export function createSecretStore(store: Store, vault: Vault, clock: Clock): SecretStore {
  const summaryOf = (row: { name: string; created_at: number; updated_at: number }): SecretSummary => ({
    name: row.name,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
  });
  const sealedOf = (row: Sealed): Sealed => ({ key_id: row.key_id, nonce: row.nonce, ciphertext: row.ciphertext });

  return {
    async list(userId) {
      const rows = await store.db
        .selectFrom('user_secrets')
        .select(['name', 'created_at', 'updated_at'])
        .where('user_id', '=', userId)
        .orderBy('name')
        .execute();
      return rows.map(summaryOf);
    },

    async put(userId, name, value) {
      // One writer per user at a time (PostgreSQL): the count below and the insert must not interleave.
      await store.lock(userSecretsLock(userId));
      const now = clock.now();
      const sealed = vault.seal(value, contextOf(userId, name));
      const existing = await store.db
        .selectFrom('user_secrets')
        .select(['created_at'])
        .where('user_id', '=', userId)
        .where('name', '=', name)
        .executeTakeFirst();
      if (existing !== undefined) {
        await store.db
          .updateTable('user_secrets')
          .set({ ...sealed, updated_at: now })
          .where('user_id', '=', userId)
          .where('name', '=', name)
          .execute();
        return { created: false, secret: summaryOf({ name, created_at: existing.created_at, updated_at: now }) };
      }
      const count = await store.db
        .selectFrom('user_secrets')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow();
      if (Number(count.n) >= MAX_SECRETS_PER_USER) {
        throw new SvcError('limit_reached', `you keep ${MAX_SECRETS_PER_USER} secrets, the most a user may keep; nothing was stored`, {
          remedy: 'Remove secrets you no longer need (swarm-node secret list, swarm-node secret rm NAME), then set this one again.',
          extensions: { limit: MAX_SECRETS_PER_USER },
        });
      }
      await store.db
        .insertInto('user_secrets')
        .values({ user_id: userId, name, ...sealed, created_at: now, updated_at: now })
        .execute();
      return { created: true, secret: summaryOf({ name, created_at: now, updated_at: now }) };
    },

    async remove(userId, name) {
      const removed = await store.db.deleteFrom('user_secrets').where('user_id', '=', userId).where('name', '=', name).executeTakeFirst();
      return Number(removed.numDeletedRows) > 0;
    },

    async valuesOf(userId, names) {
      if (names.length === 0) return {};
      const rows = await store.db
        .selectFrom('user_secrets')
        .select(['name', 'key_id', 'nonce', 'ciphertext'])
        .where('user_id', '=', userId)
        .where('name', 'in', [...names])
        .execute();
      const values: RunSecrets = {};
      for (const row of rows) {
        try {
          values[row.name] = vault.open(sealedOf(row), contextOf(userId, row.name));
        } catch {
          // Its key is gone from the ring: the run goes without it, as without a secret the user never set.
        }
      }
      return values;
    },

    async unreadable() {
      const row = await store.db
        .selectFrom('user_secrets')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('key_id', 'not in', [vault.currentKeyId, ...vault.previousKeyIds])
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    async reseal(limit) {
      if (vault.previousKeyIds.length === 0) return 0;
      const rows = await store.db
        .selectFrom('user_secrets')
        .select(['user_id', 'name', 'key_id', 'nonce', 'ciphertext'])
        .where('key_id', 'in', [...vault.previousKeyIds])
        .limit(limit)
        .execute();
      let moved = 0;
      for (const row of rows) {
        const context = contextOf(row.user_id, row.name);
        const plaintext = vault.open(sealedOf(row), context);
        // Only if unchanged meanwhile: a value set since is sealed under the current key already.
        const updated = await store.db
          .updateTable('user_secrets')
          .set(vault.seal(plaintext, context))
          .where('user_id', '=', row.user_id)
          .where('name', '=', row.name)
          .where('ciphertext', '=', row.ciphertext)
          .executeTakeFirst();
        moved += Number(updated.numUpdatedRows);
      }
      return moved;
    },
  };
}

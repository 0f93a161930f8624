// A user's webhook endpoints (docs/api.md "Webhooks"): registered with a signing secret the service makes and shows
// once, kept sealed by the vault (the service signs with it, so it cannot be a hash); rotated with the old secret
// still signing beside the new one for a while, so a receiver can switch without losing a delivery.
import { randomBytes, randomUUID } from 'node:crypto';
import { SvcError } from '../../contract/errors.js';
import {
  eventMaskOf,
  eventsOfMask,
  MAX_WEBHOOK_ENDPOINTS,
  WEBHOOK_EVENTS,
  type WebhookEndpoint,
  type WebhookEvent,
} from '../../contract/webhooks.js';
import { isoTime, type Clock } from '../../lib/clock.js';
import type { Store } from '../store/store.js';
import type { Tables } from '../store/tables.js';
import type { Vault } from '../vault/vault.js';

export type EndpointRow = Tables['webhook_endpoints'];

export interface EndpointStore {
  create(
    userId: string,
    given: { url: string; events?: readonly WebhookEvent[]; description?: string },
  ): Promise<{ endpoint: WebhookEndpoint; signing_secret: string }>;
  list(userId: string): Promise<WebhookEndpoint[]>;
  /** The user's endpoint; undefined for another user's or none (the same 404). */
  find(userId: string, endpointId: string): Promise<EndpointRow | undefined>;
  remove(userId: string, endpointId: string): Promise<boolean>;
  rotate(
    userId: string,
    endpointId: string,
    previousSeconds: number,
  ): Promise<{ endpoint: WebhookEndpoint; signing_secret: string } | undefined>;
  /** The secrets a delivery is signed with now: the current one, and the previous one until it expires. */
  signingSecrets(row: EndpointRow, now: number): string[];
  /** Seals again under the current key up to `limit` endpoints' secrets an older key sealed. */
  reseal(limit: number): Promise<number>;
  viewOf(row: EndpointRow, now: number): WebhookEndpoint;
}

/** Like a payment provider's: a prefix secret scanners know, and 32 random bytes. */
const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;
const contextOf = (endpointId: string): string => `webhook-secret\u0000${endpointId}`;

/** Held while a user's endpoints are counted and one is added (docs/api.md "Counted limits under concurrency"). */
export const webhookEndpointsLock = (userId: string): string => `webhook-endpoints:${userId}`;

export function createEndpointStore(store: Store, vault: Vault, clock: Clock): EndpointStore {
  const viewOf = (row: EndpointRow, now: number): WebhookEndpoint => ({
    endpoint_id: row.endpoint_id,
    url: row.url,
    events: eventsOfMask(row.event_mask),
    description: row.description,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    previous_secret_expires_at: row.previous_expires_at !== null && row.previous_expires_at > now ? isoTime(row.previous_expires_at) : null,
  });
  const find = (userId: string, endpointId: string) =>
    store.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('user_id', '=', userId)
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirst();

  return {
    viewOf,
    find,

    async create(userId, given) {
      return store.lockedTransaction([webhookEndpointsLock(userId)], async () => {
        const count = await store.db
          .selectFrom('webhook_endpoints')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        if (Number(count.n) >= MAX_WEBHOOK_ENDPOINTS) {
          throw new SvcError(
            'limit_reached',
            `you have ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints, the most a user may have; nothing was added`,
            {
              remedy: 'Remove one you no longer use (swarm-node webhook list, swarm-node webhook rm ID), then add this one.',
              extensions: { limit: MAX_WEBHOOK_ENDPOINTS },
            },
          );
        }
        const now = clock.now();
        const endpointId = randomUUID();
        const secret = newSigningSecret();
        const sealed = vault.seal(secret, contextOf(endpointId));
        const row: EndpointRow = {
          endpoint_id: endpointId,
          user_id: userId,
          url: given.url,
          event_mask: eventMaskOf(given.events ?? WEBHOOK_EVENTS),
          description: given.description ?? null,
          secret_key_id: sealed.key_id,
          secret_nonce: sealed.nonce,
          secret_ciphertext: sealed.ciphertext,
          previous_key_id: null,
          previous_nonce: null,
          previous_ciphertext: null,
          previous_expires_at: null,
          created_at: now,
          updated_at: now,
        };
        await store.db.insertInto('webhook_endpoints').values(row).execute();
        return { endpoint: viewOf(row, now), signing_secret: secret };
      });
    },

    async list(userId) {
      const now = clock.now();
      const rows = await store.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .orderBy('endpoint_id')
        .execute();
      return rows.map((row) => viewOf(row, now));
    },

    async remove(userId, endpointId) {
      // Its deliveries and their attempts go with it (not left to ON DELETE CASCADE, which SQLite applies only with
      // its foreign keys switched on).
      const row = await find(userId, endpointId);
      if (row === undefined) return false;
      await store.db.deleteFrom('webhook_attempts').where('endpoint_id', '=', endpointId).execute();
      await store.db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', endpointId).execute();
      await store.db.deleteFrom('webhook_endpoints').where('endpoint_id', '=', endpointId).execute();
      return true;
    },

    async rotate(userId, endpointId, previousSeconds) {
      const row = await store
        .forUpdate(store.db.selectFrom('webhook_endpoints').selectAll().where('user_id', '=', userId).where('endpoint_id', '=', endpointId))
        .executeTakeFirst();
      if (row === undefined) return undefined;
      const now = clock.now();
      const secret = newSigningSecret();
      const sealed = vault.seal(secret, contextOf(endpointId));
      const keepPrevious = previousSeconds > 0;
      const rotated: EndpointRow = {
        ...row,
        secret_key_id: sealed.key_id,
        secret_nonce: sealed.nonce,
        secret_ciphertext: sealed.ciphertext,
        previous_key_id: keepPrevious ? row.secret_key_id : null,
        previous_nonce: keepPrevious ? row.secret_nonce : null,
        previous_ciphertext: keepPrevious ? row.secret_ciphertext : null,
        previous_expires_at: keepPrevious ? now + previousSeconds * 1000 : null,
        updated_at: now,
      };
      const { endpoint_id: _id, user_id: _user, created_at: _created, ...changed } = rotated;
      await store.db.updateTable('webhook_endpoints').set(changed).where('endpoint_id', '=', endpointId).execute();
      return { endpoint: viewOf(rotated, now), signing_secret: secret };
    },

    signingSecrets(row, now) {
      const context = contextOf(row.endpoint_id);
      const secrets = [vault.open({ key_id: row.secret_key_id, nonce: row.secret_nonce, ciphertext: row.secret_ciphertext }, context)];
      if (
        row.previous_ciphertext !== null &&
        row.previous_key_id !== null &&
        row.previous_nonce !== null &&
        (row.previous_expires_at ?? 0) > now
      ) {
        secrets.push(vault.open({ key_id: row.previous_key_id, nonce: row.previous_nonce, ciphertext: row.previous_ciphertext }, context));
      }
      return secrets;
    },

    async reseal(limit) {
      if (vault.previousKeyIds.length === 0) return 0;
      const old = [...vault.previousKeyIds];
      const rows = await store.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where((eb) => eb.or([eb('secret_key_id', 'in', old), eb('previous_key_id', 'in', old)]))
        .limit(limit)
        .execute();
      let moved = 0;
      for (const row of rows) {
        const context = contextOf(row.endpoint_id);
        const current = vault.seal(
          vault.open({ key_id: row.secret_key_id, nonce: row.secret_nonce, ciphertext: row.secret_ciphertext }, context),
          context,
        );
        const previous =
          row.previous_key_id === null || row.previous_nonce === null || row.previous_ciphertext === null
            ? undefined
            : vault.seal(
                vault.open({ key_id: row.previous_key_id, nonce: row.previous_nonce, ciphertext: row.previous_ciphertext }, context),
                context,
              );
        const updated = await store.db
          .updateTable('webhook_endpoints')
          .set({
            secret_key_id: current.key_id,
            secret_nonce: current.nonce,
            secret_ciphertext: current.ciphertext,
            ...(previous === undefined
              ? {}
              : { previous_key_id: previous.key_id, previous_nonce: previous.nonce, previous_ciphertext: previous.ciphertext }),
          })
          .where('endpoint_id', '=', row.endpoint_id)
          .where('secret_ciphertext', '=', row.secret_ciphertext)
          .executeTakeFirst();
        moved += Number(updated.numUpdatedRows);
      }
      return moved;
    },
  };
}

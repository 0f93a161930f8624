// Schema version 15: around the runs (docs/api.md "Secrets", "Budgets", "Usage", "Webhooks"). A user's secrets,
// encrypted (user-secrets/vault.ts); the caps on what a user spends, per day and month, on all agents or on one;
// the endpoints a user's run events are sent to, each with its signing secret (encrypted like the secrets, since
// the service must sign with it), and the outbox of deliveries that the state changes of runs write in their own
// transactions, with every attempt's answer.
import type { Kysely } from 'kysely';

export async function aroundTheRuns(db: Kysely<unknown>): Promise<void> {
  // A value is AES-256-GCM under the key named by key_id: nonce and ciphertext (tag appended) in base64, so a key
  // can be rotated (docs/operations.md "Secrets at rest").
  await db.schema
    .createTable('user_secrets')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('ciphertext', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('user_secrets_pkey', ['user_id', 'name'])
    .execute();
  // scope: '*' for every agent of the user, else an agent_id; period: 'day' or 'month' (UTC).
  await db.schema
    .createTable('budgets')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('period', 'text', (c) => c.notNull())
    .addColumn('cap_cents', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('budgets_pkey', ['user_id', 'scope', 'period'])
    .execute();
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    // One bit per event type (contract/webhooks.ts WEBHOOK_EVENTS), so the outbox picks endpoints in its one INSERT.
    .addColumn('event_mask', 'integer', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('secret_key_id', 'text', (c) => c.notNull())
    .addColumn('secret_nonce', 'text', (c) => c.notNull())
    .addColumn('secret_ciphertext', 'text', (c) => c.notNull())
    // The signing secret before the last rotation, still signed with until it expires (two v1 signatures meanwhile).
    .addColumn('previous_key_id', 'text')
    .addColumn('previous_nonce', 'text')
    .addColumn('previous_ciphertext', 'text')
    .addColumn('previous_expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_endpoints_by_user').on('webhook_endpoints').columns(['user_id', 'created_at']).execute();
  // One row per event and endpoint; written by the state change's transaction, sent by the delivery worker.
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.endpoint_id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload_json', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    // pending (to send at next_attempt_at), delivered, failed (its attempts used up; a re-send makes it pending).
    .addColumn('status', 'text', (c) => c.notNull())
    // attempts: every attempt ever made (they are numbered by it); tries: those of the current series, which a
    // re-send starts anew and the backoff follows.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tries', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('last_status_code', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('delivered_at', 'bigint')
    .addPrimaryKeyConstraint('webhook_deliveries_pkey', ['event_id', 'endpoint_id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_by_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'event_id']).execute();
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('error', 'text')
    .addColumn('response_excerpt', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_attempts_pkey', ['event_id', 'endpoint_id', 'attempt'])
    .addForeignKeyConstraint(
      'webhook_attempts_delivery',
      ['event_id', 'endpoint_id'],
      'webhook_deliveries',
      ['event_id', 'endpoint_id'],
      (c) => c.onDelete('cascade'),
    )
    .execute();
}

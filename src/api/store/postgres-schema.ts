// The service's schema on PostgreSQL, in Kysely's schema builder: the tables SQLite reaches through its five shipped
// migrations (sqlite-migrations.ts), created at once. PostgreSQL's version numbers follow SQLite's, so this is
// version 5 and a later change to the schema is one migration (shared-migrations.ts) run by both engines.
// Integers that hold times or cents are BIGINT (milliseconds since the epoch outgrow INTEGER); bundles are BYTEA.
import { sql, type Kysely } from 'kysely';

export const POSTGRES_BASELINE_VERSION = 5;

export async function createBaselineSchema(db: Kysely<unknown>): Promise<void> {
  const schema = db.schema;
  await schema
    .createTable('payments')
    .addColumn('payment_id', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('customer_email', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn('confirmed_at', 'bigint')
    .addColumn('recorded_at', 'bigint', (c) => c.notNull())
    .execute();
  await schema
    .createIndex('payments_by_customer')
    .on('payments')
    .columns(['customer_email', 'offer_id', 'merchant_id', 'status'])
    .execute();

  await schema
    .createTable('webhook_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .execute();

  await schema
    .createTable('sessions')
    .addColumn('session_id', 'text', (c) => c.primaryKey())
    .addColumn('tier_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('pending', 'active')`))
    .addColumn('payment_id', 'text', (c) => c.unique().references('payments.payment_id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('activated_at', 'bigint')
    .execute();

  await schema
    .createTable('deploy_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.references('sessions.session_id'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('tier_id', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.payment_id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await schema.createIndex('deploy_tokens_by_session').on('deploy_tokens').column('session_id').execute();
  await schema
    .createIndex('deploy_tokens_by_user')
    .on('deploy_tokens')
    .column('user_id')
    .where(sql.ref('session_id'), 'is', null)
    .execute();

  await schema
    .createTable('nodes')
    .addColumn('node_id', 'text', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.references('sessions.session_id'))
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('tier_id', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.payment_id'))
    .addColumn('enrolled_at', 'bigint', (c) => c.notNull())
    .addColumn('credential_hash', 'text', (c) => c.unique())
    .addColumn('hostname', 'text')
    .addColumn('version', 'text')
    .addColumn('last_seen_at', 'bigint')
    .addColumn('next_credential_hash', 'text', (c) => c.unique())
    .execute();
  await schema.createIndex('nodes_by_user').on('nodes').column('user_id').execute();

  await schema
    .createTable('node_agents')
    .addColumn('node_id', 'text', (c) => c.notNull().references('nodes.node_id'))
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('registered_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('node_agents_pkey', ['node_id', 'agent_id'])
    .execute();

  await schema
    .createTable('issued_tokens')
    .addColumn('jti', 'text', (c) => c.primaryKey())
    .addColumn('sub', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('kid', 'text', (c) => c.notNull())
    .addColumn('payment_id', 'text', (c) => c.notNull().references('payments.payment_id'))
    .addColumn('issued_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();

  await schema
    .createTable('wallets')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('balance_cents', 'bigint', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`balance_cents >= 0`),
    )
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await schema
    .createTable('ledger_entries')
    .addColumn('entry_id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind IN ('credit', 'debit', 'refund')`))
    .addColumn('amount_cents', 'bigint', (c) => c.notNull().check(sql`amount_cents > 0`))
    .addColumn('payment_id', 'text', (c) => c.unique().references('payments.payment_id'))
    .addColumn('run_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await schema
    .createIndex('ledger_entries_run_kind')
    .unique()
    .on('ledger_entries')
    .columns(['run_id', 'kind'])
    .where(sql.ref('run_id'), 'is not', null)
    .execute();
  await schema.createIndex('ledger_entries_by_user').on('ledger_entries').columns(['user_id', 'entry_id']).execute();

  await schema
    .createTable('runs')
    .addColumn('run_id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status IN ('queued', 'running', 'succeeded', 'failed')`))
    .addColumn('charged_cents', 'bigint', (c) => c.notNull().check(sql`charged_cents >= 0`))
    .addColumn('input_json', 'text')
    .addColumn('output_json', 'text')
    .addColumn('pinned_node_id', 'text')
    .addColumn('node_id', 'text')
    .addColumn('lease_id', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('finished_by', 'text', (c) => c.check(sql`finished_by IN ('node', 'service')`))
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .addColumn('bundle_digest', 'text')
    .execute();
  await schema.createIndex('runs_by_user').on('runs').columns(['user_id', 'started_at']).execute();
  await schema.createIndex('runs_queued').on('runs').columns(['user_id', 'started_at']).where(sql.ref('status'), '=', 'queued').execute();
  await schema.createIndex('runs_leased').on('runs').column('lease_expires_at').where(sql.ref('status'), '=', 'running').execute();
  await schema.createIndex('runs_by_node').on('runs').columns(['node_id', 'finished_at']).execute();

  await schema
    .createTable('idempotency_keys')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().check(sql`state IN ('in_progress', 'done')`))
    .addColumn('status_code', 'integer')
    .addColumn('response_json', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('run_id', 'text')
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['user_id', 'idempotency_key'])
    .execute();
  await schema.createIndex('idempotency_keys_by_run').on('idempotency_keys').column('run_id').execute();

  await schema
    .createTable('sandbox_payments')
    .addColumn('payment_id', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('customer_email', 'text', (c) => c.notNull())
    .addColumn('offer_id', 'text', (c) => c.notNull())
    .addColumn('merchant_id', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('confirmed_at', 'bigint')
    .addColumn('webhook_event_id', 'text')
    .addColumn('webhook_delivered_at', 'bigint')
    .addColumn('webhook_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();

  await schema
    .createTable('wallet_sessions')
    .addColumn('session_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('token_jti', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await schema.createIndex('wallet_sessions_by_expiry').on('wallet_sessions').column('expires_at').execute();

  await schema
    .createTable('agent_bundles')
    .addColumn('digest', 'text', (c) => c.primaryKey().check(sql`length(digest) = 64`))
    .addColumn('content', 'bytea', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull().check(sql`size_bytes > 0`))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await schema
    .createTable('agent_versions')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull().references('agent_bundles.digest'))
    .addColumn('input_schema_json', 'text', (c) => c.notNull())
    .addColumn('files', 'integer', (c) => c.notNull())
    .addColumn('unpacked_bytes', 'bigint', (c) => c.notNull())
    .addColumn('uploaded_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('agent_versions_pkey', ['user_id', 'agent_id', 'version'])
    .addUniqueConstraint('agent_versions_digest', ['user_id', 'agent_id', 'digest'])
    .execute();
  await schema.createIndex('agent_versions_by_digest').on('agent_versions').columns(['digest', 'user_id']).execute();

  await schema
    .createTable('agent_current')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('agent_current_pkey', ['user_id', 'agent_id'])
    .addForeignKeyConstraint('agent_current_version', ['user_id', 'agent_id', 'digest'], 'agent_versions', [
      'user_id',
      'agent_id',
      'digest',
    ])
    .execute();
}

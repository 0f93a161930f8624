// Changes to the schema after version 5, one entry per version, each run by both engines (Kysely's schema builder
// compiles it for each): entry i brings the schema from version 6 + i - 1 to 6 + i. SQLite reaches version 5
// through its shipped history (sqlite-migrations.ts), PostgreSQL through its baseline (postgres-schema.ts); from
// there they move together. Append; never edit a shipped one.
import { sql, type Kysely } from 'kysely';
import { aroundTheRuns } from './around-migration.js';
import { budgetCounters } from './budget-counters-migration.js';
import { runArtifacts } from './artifacts-migration.js';
import { runsAsJobs } from './jobs-migration.js';
import { runLogs } from './logs-migration.js';
import { runEvents } from './run-events-migration.js';
import { nodeHealthAndDrain } from './node-health-migration.js';
import { rateCounters } from './rate-counters-migration.js';
import { schedules } from './schedules-migration.js';

export const SHARED_MIGRATIONS_FROM_VERSION = 6;

/**
 * When a version last stopped being current: with its upload time, how long it has gone unused, after which the
 * retention sweep may remove it. The versions stored before start their time now, so none goes at the upgrade.
 */
export async function versionReleasedAt(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('agent_versions').addColumn('released_at', 'bigint').execute();
  await sql`UPDATE agent_versions SET released_at = ${Date.now()}`.execute(db);
}

export const SHARED_MIGRATIONS: ReadonlyArray<(db: Kysely<unknown>) => Promise<void>> = [
  /* 6: a node removed from its user's fleet (by the user, or offline too long) keeps its row, so its credential is
     answered 410 node_removed rather than taken for a forgery, and its runs keep naming it. */
  async (db) => {
    await db.schema.alterTable('nodes').addColumn('removed_at', 'bigint').execute();
  },
  /* 7: labels (docs/api.md "Labels") */ async (db) => {
    // What each node carries (PUT /v1/swarm/nodes/self/labels replaces the set), and what each run requires of the
    // node that takes it (execute's `labels`; a run without is not in run_labels). Rows, not a list in a column, so
    // "the node carries every label of the run" is one NOT EXISTS both engines plan with these primary keys.
    await db.schema
      .createTable('node_labels')
      .addColumn('node_id', 'text', (c) => c.notNull().references('nodes.node_id').onDelete('cascade'))
      .addColumn('label', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('node_labels_pkey', ['node_id', 'label'])
      .execute();
    await db.schema
      .createTable('run_labels')
      .addColumn('run_id', 'text', (c) => c.notNull().references('runs.run_id').onDelete('cascade'))
      .addColumn('label', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('run_labels_pkey', ['run_id', 'label'])
      .execute();
  },
  /* 8: ephemeral nodes (docs/api.md "Ephemeral nodes") */ async (db) => {
    // An ephemeral node takes one run (as GitHub's --ephemeral runners): enrolled so (1), and the run
    // it took, set in the transaction that leases or starts it, after locking this row (src/api/nodes/ephemeral.ts),
    // so no second lease ever finds it empty. On the node's row, not derived from runs: one row to lock and read.
    await db.schema
      .alterTable('nodes')
      .addColumn('ephemeral', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('nodes').addColumn('ephemeral_run_id', 'text').execute();
  },
  /* 9: a node's name among several on its host (install --name), reported with its polls like its hostname, so the
     fleet view tells apart the nodes of one host; null for a host's default node. */
  async (db) => {
    await db.schema.alterTable('nodes').addColumn('name', 'text').execute();
  },
  /* 10: identity (docs/api.md "Sign-in: a verified inbox", "Revocation", "Audit") */ async (db) => {
    // The one-time codes mailed to prove an inbox: only an HMAC of each code is kept, with its attempts, so a copy of
    // the database signs nobody in and a code is guessed at most MAX_CODE_ATTEMPTS times.
    await db.schema
      .createTable('email_challenges')
      .addColumn('challenge_id', 'text', (c) => c.primaryKey())
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('client_address', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('used_at', 'bigint')
      .execute();
    await db.schema.createIndex('email_challenges_by_email').on('email_challenges').columns(['email', 'created_at']).execute();
    await db.schema.createIndex('email_challenges_by_client').on('email_challenges').columns(['client_address', 'created_at']).execute();
    // Every token issued is recorded (a token whose jti is not is refused), with when the inbox was proven and by whom.
    await db.schema.alterTable('issued_tokens').addColumn('auth_time', 'bigint').execute();
    await db.schema.alterTable('issued_tokens').addColumn('client_address', 'text').execute();
    await db.schema.alterTable('issued_tokens').addColumn('user_agent', 'text').execute();
    await db.schema.alterTable('issued_tokens').addColumn('revoked_at', 'bigint').execute();
    await db.schema.createIndex('issued_tokens_by_sub').on('issued_tokens').columns(['sub', 'issued_at']).execute();
    // Revocations as a log every instance tails (auth/revocations.ts): one token (jti), or every token of a user
    // issued before not_before (sign out everywhere).
    await db.schema
      .createTable('token_revocations')
      .addColumn('revocation_id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('jti', 'text')
      .addColumn('not_before', 'bigint')
      .addColumn('revoked_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('token_revocations_by_time').on('token_revocations').column('revoked_at').execute();
    // What a user can look back on: sign-ins, tokens, enrolments, removals, rotations, uploads (GET /v1/audit).
    await db.schema
      .createTable('audit_events')
      .addColumn('event_id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('client_address', 'text')
      .addColumn('user_agent', 'text')
      .addColumn('detail_json', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_events_by_user').on('audit_events').columns(['user_id', 'event_id']).execute();
    // svc-api --sandbox keeps the mail it sends (svc-api sandbox mail --to ADDRESS), beside any SMTP relay.
    await db.schema
      .createTable('sandbox_outbox')
      .addColumn('message_id', 'text', (c) => c.primaryKey())
      .addColumn('to_address', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('text_body', 'text', (c) => c.notNull())
      .addColumn('sent_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sandbox_outbox_by_address').on('sandbox_outbox').columns(['to_address', 'message_id']).execute();
  },
  /* upload retention (docs/api.md "Agent upload", "Quota and retention") */ versionReleasedAt,
  /* 12: runs as jobs (docs/api.md "Runs as jobs") */ runsAsJobs,
  /* 13: the logs of runs (docs/api.md "Run logs") */ runLogs,
  /* 14: the artifacts of runs (docs/api.md "Run artifacts") */ runArtifacts,
  /* 15: around the runs (docs/api.md "Secrets", "Budgets", "Usage", "Webhooks") */ aroundTheRuns,
  /* 16: the console's recent sign-in (docs/api.md "Console") */ async (db) => {
    // When the session's user last proved the inbox (ms): the JWT's auth_time when it was made, then the console's
    // own code confirmation. What changes secrets or webhooks from the console needs it within 15 minutes.
    await db.schema.alterTable('wallet_sessions').addColumn('auth_time', 'bigint').execute();
  },
  /* 17: budget counters (docs/api.md "Budgets") */ budgetCounters,
  /* 18: counted windows (docs/api.md "Counted limits under concurrency") */ rateCounters,
  /* 19: what started a run (docs/api.md "Triggers"); the runs before it keep null, shown as not known. */
  async (db) => {
    await db.schema.alterTable('runs').addColumn('trigger', 'text').execute();
  },
  /* 20: a node's health and drain (docs/api.md "Node health", "Draining a node") */ nodeHealthAndDrain,
  /* 21: schedules (docs/api.md "Schedules") */ schedules,
  /* 22: a schedule's webhook events (docs/api.md "Webhooks") */ async (db) => {
    await db.schema.alterTable('webhook_deliveries').addColumn('schedule_id', 'text').execute();
    // An endpoint that took every event, the five of runs then, takes every event still.
    await sql`UPDATE webhook_endpoints SET event_mask = 255 WHERE event_mask = 31`.execute(db);
  },
  /* 23: a node's daemon's schedules moved to the service (docs/api.md "Schedules") */ async (db) => {
    await db.schema.alterTable('schedules').addColumn('migrated_from_node', 'text').execute();
    // One schedule a node and agent: two migrations racing make one.
    await db.schema.createIndex('schedules_migrated').unique().on('schedules').columns(['migrated_from_node', 'agent_id']).execute();
    await db.schema.alterTable('nodes').addColumn('schedules_migrated_at', 'bigint').execute();
  },
  /* 24: a run's structured events (docs/api.md "Run events") */ runEvents,
];

/** The schema version this program migrates either engine to. */
export const SERVICE_SCHEMA_VERSION = SHARED_MIGRATIONS_FROM_VERSION - 1 + SHARED_MIGRATIONS.length;

// PostgreSQL, when SVC_DATABASE_URL names one (docs/operations.md "Several instances on PostgreSQL"): a pool of
// connections through `pg`, under Kysely. Several svc-api instances share the database, so the schema is brought
// up to date under an advisory lock: instances started together migrate one after the other, and the later ones
// find nothing left to do.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { SvcError } from '../../contract/errors.js';
import { POSTGRES_BASELINE_VERSION, createBaselineSchema } from './postgres-schema.js';
import { SERVICE_SCHEMA_VERSION, SHARED_MIGRATIONS, SHARED_MIGRATIONS_FROM_VERSION } from './shared-migrations.js';
import { createPostgresNotifications } from './postgres-notifications.js';
import { NamedStatementClient } from './named-statements.js';
import { createStore, type Store } from './store.js';
import type { Tables } from './tables.js';

/** pg_advisory_xact_lock key of the migrations ("svc-mig" in ASCII): one value, the same in every instance. */
const MIGRATION_LOCK_KEY = 0x7376632d6d6967n;
const INT8_OID = 20;
/** A request waits this long for a connection, then fails 503 (the database is down or the pool exhausted). */
const CONNECT_TIMEOUT_MS = 5_000;
const DEFAULT_POOL_SIZE = 10;

export interface PostgresOptions {
  url: string;
  /** Connections this instance keeps at most; N instances open up to N times this. */
  poolSize?: number;
  /** Told when a connection breaks (PostgreSQL restarted, the network cut): the pool replaces it at the next query. */
  onIdleError?: (error: Error) => void;
}

export async function openPostgresStore(options: PostgresOptions): Promise<Store> {
  const pool = new pg.Pool({
    connectionString: options.url,
    // The statements compiled once are prepared per connection under their names (named-statements.ts).
    Client: NamedStatementClient,
    max: options.poolSize ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // Times in milliseconds and cents are BIGINT; as JS numbers they are exact up to 2^53, far past any real value.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // Without a listener a connection dropped by the server (a restart, a network cut) would crash the process: the
  // pool reports idle ones, and a connection in use reports on itself as well as failing its query (503).
  pool.on('error', (error) => options.onIdleError?.(error));
  pool.on('connect', (client) => client.on('error', (error) => options.onIdleError?.(error)));
  const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) });
  try {
    await sql`SELECT 1`.execute(kysely);
  } catch (error) {
    await kysely.destroy();
    throw new SvcError(
      'local_state',
      `cannot reach the PostgreSQL database of SVC_DATABASE_URL (${describeUrl(options.url)}): ${(error as Error).message}`,
      {
        remedy:
          'Check that PostgreSQL runs and accepts this user from this host, and that SVC_DATABASE_URL is postgres://USER:PASSWORD@HOST:PORT/DATABASE.',
        cause: error,
      },
    );
  }
  try {
    await migrate(kysely as unknown as Kysely<unknown>, options.url);
  } catch (error) {
    await kysely.destroy();
    throw error;
  }
  const notifications = createPostgresNotifications(options.url, pool, (error) => options.onIdleError?.(error));
  const store = createStore(
    'postgres',
    kysely,
    async () => {
      await notifications.close();
      await kysely.destroy();
    },
    { connections: options.poolSize ?? DEFAULT_POOL_SIZE },
  );
  return Object.assign(store, { notifications });
}

async function migrate(db: Kysely<unknown>, url: string): Promise<void> {
  const target = SERVICE_SCHEMA_VERSION;
  await db.transaction().execute(async (trx) => {
    // Held until this transaction ends: a second instance starting now waits here, then finds the schema current.
    await sql`SELECT pg_advisory_xact_lock(${sql.lit(MIGRATION_LOCK_KEY.toString())}::bigint)`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS svc_schema_version (version integer NOT NULL)`.execute(trx);
    const row = (await sql<{ version: number }>`SELECT version FROM svc_schema_version`.execute(trx)).rows[0];
    let version = row?.version ?? 0;
    if (version > target) {
      throw new SvcError(
        'local_state',
        `the database of SVC_DATABASE_URL (${describeUrl(url)}) has schema version ${version}, newer than this program's ${target}`,
        {
          remedy: 'Upgrade every instance to the newer svc-api, or restore the database from the dump taken before the upgrade.',
        },
      );
    }
    if (version === target) return;
    if (version === 0) {
      await createBaselineSchema(trx);
      version = POSTGRES_BASELINE_VERSION;
      await sql`INSERT INTO svc_schema_version (version) VALUES (${version})`.execute(trx);
    }
    for (; version < target; version += 1) await SHARED_MIGRATIONS[version + 1 - SHARED_MIGRATIONS_FROM_VERSION]!(trx);
    await sql`UPDATE svc_schema_version SET version = ${target}`.execute(trx);
  });
}

/** The URL without its password, for messages and logs. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'not a valid URL';
  }
}

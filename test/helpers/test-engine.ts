// Which storage engine the API tests run on: SQLite (the default), or PostgreSQL in the vitest project that sets
// SVC_TEST_ENGINE=postgres (vitest.config.ts), whose global setup starts the server (postgres-global-setup.ts).
// Each service a test starts gets a database of its own, named after its data directory, so a restart on the same
// data directory finds its data again, as it would in its SQLite file.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export type TestEngine = 'sqlite' | 'postgres';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
  }
}

export function testEngine(): TestEngine {
  return process.env.SVC_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';
}

/** The URL of the database of the service whose data directory is `dataDir`, created on first use. */
export async function postgresDatabaseFor(dataDir: string): Promise<string> {
  const adminUrl = inject('postgresAdminUrl');
  const name = `svc_${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (error) {
    // 42P04 duplicate_database: a restart of the same service.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

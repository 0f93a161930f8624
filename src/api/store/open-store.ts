// Which engine the service stores in (docs/api.md "Storage"): PostgreSQL when SVC_DATABASE_URL is set,
// else the SQLite file in the data directory.
import { join } from 'node:path';
import { SvcError } from '../../contract/errors.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';
import type { Store } from './store.js';

export interface OpenedStore {
  store: Store;
  /** The SQLite connection when that is the engine (the WAL checkpoint, tests); undefined on PostgreSQL. */
  sqlite: SqliteDatabase | undefined;
}

export async function openStore(options: {
  dataDir: string;
  databaseUrl: string | undefined;
  onIdleError?: (error: Error) => void;
}): Promise<OpenedStore> {
  const url = options.databaseUrl;
  if (url === undefined || url === '') {
    const { openSqliteStore } = await import('./open-sqlite.js');
    const store = await openSqliteStore(join(options.dataDir, 'svc-api.db'));
    return { store, sqlite: store.sqlite };
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    throw new SvcError('usage', 'SVC_DATABASE_URL must be a postgres:// URL (unset it to use the SQLite file in --data-dir)', {
      remedy: 'Set SVC_DATABASE_URL=postgres://USER:PASSWORD@HOST:PORT/DATABASE, or unset it.',
    });
  }
  const { openPostgresStore } = await import('./open-postgres.js');
  return { store: await openPostgresStore({ url, onIdleError: options.onIdleError }), sqlite: undefined };
}

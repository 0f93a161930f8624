// Round trips to PostgreSQL, counted by the server (pg_stat_statements, preloaded in the bench's server): every
// statement svc-api sends is one call, BEGIN and COMMIT included (track_utility), whatever the client library does.
// Counted per database, so the other sides' idle instances (their sweeps, their polls) are not counted.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

/** The server settings the counting needs: given to startPostgresServer. */
export const STATEMENT_COUNTING_SETTINGS = [
  'shared_preload_libraries=pg_stat_statements',
  'pg_stat_statements.track_utility=on',
  'pg_stat_statements.max=10000',
];

export interface StatementCounts {
  total: number;
  /** The statements most called, most first: their calls, the server's mean execution time (ms), their text. */
  top: { calls: number; execMs: number; query: string }[];
}

export interface StatementCounter {
  reset(): Promise<void>;
  /** The calls made in `database` since the last reset. */
  read(database: string): Promise<StatementCounts>;
  close(): Promise<void>;
}

export async function createStatementCounter(adminUrl: string): Promise<StatementCounter> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    async reset() {
      await client.query('SELECT pg_stat_statements_reset()');
    },
    async read(database) {
      const { rows } = await client.query<{ calls: string; exec_ms: number; query: string }>(
        `SELECT calls, mean_exec_time AS exec_ms, query FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC`,
        [database],
      );
      const shortened = (query: string): string => query.replace(/\s+/g, ' ').slice(0, 90);
      return {
        total: rows.reduce((sum, row) => sum + Number(row.calls), 0),
        top: rows.slice(0, 12).map((row) => ({ calls: Number(row.calls), execMs: Number(row.exec_ms), query: shortened(row.query) })),
      };
    },
    async close() {
      await client.end();
    },
  };
}

/**
 * The CPU time the PostgreSQL server has used so far (the postmaster and its backends, those that exited included),
 * in ms, from /proc.
 */
export function databaseCpuMilliseconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.replace(/^.*\) /s, '').split(' ');
      // Its own time and that of its children it reaped: a backend that exits moves its time into the postmaster's.
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
    } catch {
      // A process gone since the directory was listed.
    }
  }
  return total;
}

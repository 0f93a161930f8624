// Tests read the service's database synchronously (`service.db.prepare(sql).get(...)`, better-sqlite3's API), to
// check what a request left behind right after it. On PostgreSQL the same reads go to a worker thread that holds a
// `pg` connection, and this thread waits on it (Atomics.wait): the test files stay as they are on both engines. Only
// what the tests use is there: prepare → get, all, run, pluck; `?` and `@name` parameters; and the two SQLite
// catalogue reads of dbSnapshot (the tables, rows in a stable order).
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const pg = require('pg');
pg.types.setTypeParser(20, Number);
const client = new pg.Client({ connectionString: workerData.url });
const ready = client.connect();
client.on('error', () => {});
parentPort.on('message', async ({ text, params, signal, port }) => {
  try {
    await ready;
    const result = await client.query(text, params);
    port.postMessage({ rows: result.rows, rowCount: result.rowCount ?? 0 });
  } catch (error) {
    port.postMessage({ error: String(error && error.message), code: error && error.code });
  }
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
`;

interface Reply {
  rows?: Record<string, unknown>[];
  rowCount?: number;
  error?: string;
  code?: string;
}

export interface SyncPostgres {
  /** better-sqlite3's reading API over PostgreSQL, for the tests (typed as it, since the tests use it as it). */
  db: SqliteDatabase;
  close(): Promise<void>;
}

export function syncPostgres(url: string): SyncPostgres {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { url } });
  worker.unref();
  const query = (text: string, params: unknown[]): { rows: Record<string, unknown>[]; rowCount: number } => {
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    worker.postMessage({ text, params, signal, port: port2 }, [port2]);
    if (Atomics.wait(signal, 0, 0, 60_000) === 'timed-out') throw new Error(`the test's PostgreSQL query timed out: ${text}`);
    const reply = receiveMessageOnPort(port1)?.message as Reply;
    port1.close();
    if (reply.error !== undefined) throw Object.assign(new Error(`${reply.error} (in ${text})`), { code: reply.code });
    return { rows: reply.rows!, rowCount: reply.rowCount! };
  };

  const prepare = (sql: string) => {
    let pluck = false;
    const bind = (args: unknown[]): { text: string; params: unknown[] } => translate(sql, args);
    const statement = {
      pluck(on = true) {
        pluck = on;
        return statement;
      },
      get(...args: unknown[]) {
        const { text, params } = bind(args);
        const row = query(text, params).rows[0];
        return row === undefined ? undefined : pluck ? Object.values(row)[0] : row;
      },
      all(...args: unknown[]) {
        const { text, params } = bind(args);
        const rows = query(text, params).rows;
        return pluck ? rows.map((row) => Object.values(row)[0]) : rows;
      },
      run(...args: unknown[]) {
        const { text, params } = bind(args);
        return { changes: query(text, params).rowCount, lastInsertRowid: 0 };
      },
    };
    return statement;
  };

  const db = { prepare, name: url, engine: 'postgres' } as unknown as SqliteDatabase;
  return { db, close: () => worker.terminate().then(() => undefined) };
}

const SQLITE_TABLES = /SELECT name FROM sqlite_master WHERE type = 'table'[^]*/i;
const ORDER_BY_ROWID = /^SELECT \* FROM "(\w+)" ORDER BY rowid$/i;

/** SQLite's text and parameters as PostgreSQL's: `?` and `@name` become $n; the catalogue reads become PostgreSQL's. */
function translate(sql: string, args: unknown[]): { text: string; params: unknown[] } {
  if (SQLITE_TABLES.test(sql)) {
    return {
      text: "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
      params: [],
    };
  }
  const rowid = ORDER_BY_ROWID.exec(sql.trim());
  // No rowid: rows in the order of their text, stable as long as the rows are the same (what a snapshot compares).
  if (rowid !== null) return { text: `SELECT * FROM "${rowid[1]}" t ORDER BY t::text`, params: [] };
  const named =
    args.length === 1 && args[0] !== null && typeof args[0] === 'object' && !Array.isArray(args[0]) && !Buffer.isBuffer(args[0]);
  const params: unknown[] = [];
  let text = '';
  let inString = false;
  for (let i = 0; i < sql.length; i += 1) {
    const char = sql[i]!;
    if (char === "'") inString = !inString;
    if (!inString && char === '?') {
      params.push(args[params.length]);
      text += `$${params.length}`;
    } else if (!inString && char === '@' && named) {
      const name = /^@(\w+)/.exec(sql.slice(i))![1]!;
      params.push((args[0] as Record<string, unknown>)[name]);
      text += `$${params.length}`;
      i += name.length;
    } else {
      text += char;
    }
  }
  return { text, params: params.map((value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value)) };
}

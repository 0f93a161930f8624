// The service's storage behind one interface for both engines (docs/api.md "Storage"): SQLite, the embedded
// default, or PostgreSQL when SVC_DATABASE_URL names one. Every query is written once with Kysely's builder and
// compiled per engine. A transaction is carried by the async context: a store function called inside
// `transaction()` runs on that transaction without being handed it, so the stores compose the way they did when
// better-sqlite3's transactions were synchronous.
import { AsyncLocalStorage } from 'node:async_hooks';
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { createGroupCommit, type OpenTransaction } from './group-commit.js';
import type { Notifications } from './postgres-notifications.js';
import type { Tables } from './tables.js';

export type Engine = 'sqlite' | 'postgres';

export interface Store {
  readonly engine: Engine;
  /** How many connections it holds at most: SQLite's one, PostgreSQL's pool. */
  readonly connections: number;
  /** Inside `transaction()`, that transaction; outside, the database (each statement its own transaction). */
  readonly db: Kysely<Tables>;
  /**
   * Runs `work` in one transaction (joining the one already open, if any). SQLite: BEGIN IMMEDIATE, so transactions
   * are serialised, and those of one event-loop turn share one commit, each under a savepoint (group-commit.ts). PostgreSQL: READ COMMITTED; what must not interleave takes a row lock (`forUpdate`) or `lock()`.
   */
  transaction<T>(work: () => Promise<T>): Promise<T>;
  /**
   * Runs `work`, one statement that is atomic by itself. SQLite: in the group commit, as a transaction (a commit of
   * its own would cost more than the statement). PostgreSQL: as it is, without the two round trips of BEGIN and
   * COMMIT.
   */
  statement<T>(work: () => Promise<T>): Promise<T>;
  /** Serialises the transactions that take the same key until they end (pg_advisory_xact_lock); SQLite: nothing to do. */
  lock(key: string): Promise<void>;
  /**
   * Runs `work` in a transaction that takes `lock()` of each key, in the order given (every caller must use one
   * order, as for any locks). On PostgreSQL this instance's calls for a key take turns in the process first, holding
   * no connection: a flood of requests for one key (one user, one client) waits in memory, one of them at the
   * database, instead of holding the pool while it queues for the lock (docs/api.md "Counted limits under
   * concurrency"). Inside a transaction already open, only the locks: waiting in the process while holding a
   * connection could wait for itself. SQLite: a transaction, its writers taking turns already.
   */
  lockedTransaction<T>(keys: readonly string[], work: () => Promise<T>): Promise<T>;
  /** Adds FOR UPDATE on PostgreSQL (SQLite's write lock is the whole database already). */
  forUpdate<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** PostgreSQL's: wake-ups between the instances on the database (postgres-notifications.ts). */
  readonly notifications?: Notifications;
  /** One round trip to the database: throws when it is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** SQLite's: transactions of one event-loop turn share one commit (group-commit.ts). */
export interface GroupCommit {
  /** Whether the connection still holds its transaction: SQLite rolls one back itself on some errors. */
  inTransaction(): boolean;
}

export function createStore(
  engine: Engine,
  root: Kysely<Tables>,
  close: () => Promise<void>,
  options: { groupCommit?: GroupCommit; connections?: number } = {},
): Store {
  const { groupCommit } = options;
  const current = new AsyncLocalStorage<OpenTransaction>();
  const batched = groupCommit === undefined ? undefined : createGroupCommit(root, current, () => groupCommit.inTransaction());
  const transaction = async <T>(work: () => Promise<T>): Promise<T> => {
    if (current.getStore()?.open === true) return work();
    if (batched !== undefined) return batched(work);
    return root.transaction().execute(async (trx) => {
      const open: OpenTransaction = { trx, open: true };
      try {
        return await current.run(open, work);
      } finally {
        open.open = false;
      }
    });
  };
  const lock = async (key: string): Promise<void> => {
    if (engine !== 'postgres') return;
    const open = current.getStore();
    if (open?.open !== true) throw new Error('Store.lock() outside a transaction');
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(open.trx);
  };
  // The last in line for each key; its promise settles when it is done, and the next goes.
  const lastInLine = new Map<string, Promise<void>>();
  const turnOf = async (key: string): Promise<() => void> => {
    const before = lastInLine.get(key);
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    lastInLine.set(key, mine);
    if (before !== undefined) await before;
    return () => {
      if (lastInLine.get(key) === mine) lastInLine.delete(key);
      done();
    };
  };
  const lockedTransaction = async <T>(keys: readonly string[], work: () => Promise<T>): Promise<T> => {
    const locked = async (): Promise<T> => {
      for (const key of keys) await lock(key);
      return work();
    };
    if (engine !== 'postgres' || current.getStore()?.open === true) return transaction(locked);
    const turns: Array<() => void> = [];
    try {
      for (const key of keys) turns.push(await turnOf(key));
      return await transaction(locked);
    } finally {
      for (const next of turns.reverse()) next();
    }
  };
  return {
    engine,
    connections: options.connections ?? 1,
    get db(): Kysely<Tables> {
      // Work started inside a transaction and still running after it ended (a wake-up, a background delivery)
      // inherits the context: it must use the database, not the finished transaction.
      const open = current.getStore();
      return open?.open === true ? open.trx : root;
    },
    transaction,
    statement: (work) => (batched === undefined ? work() : transaction(work)),
    lock,
    lockedTransaction,
    forUpdate: (query) => (engine === 'postgres' ? query.forUpdate() : query),
    async ping() {
      await sql`SELECT 1`.execute(root);
    },
    close,
  };
}

// Group commit on SQLite (docs/api.md "Storage"): the transactions asked for in one turn of the
// event loop run one after another inside one database transaction, each under a savepoint of its own, and are
// committed together. SQLite serialises its writers anyway, and a commit (writing every page the transaction
// touched to the WAL) cost more than the statements of a run; a batch shares the pages its runs touch and pays one
// commit. What each caller sees is unchanged: its work is atomic (a failure rolls back its savepoint alone), it sees
// the work committed or batched before it, and its promise settles only once the batch is durable. A batch whose
// commit fails fails every transaction in it, none of whose effects stay.
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ControlledTransaction, Kysely } from 'kysely';
import type { Tables } from './tables.js';

export interface OpenTransaction {
  trx: Kysely<Tables>;
  open: boolean;
}

interface Pending {
  work: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Past this many, a batch commits and the next one starts: the answers of the first transactions in a batch wait for
 * its commit, and the bound keeps that wait short under a flood.
 */
const MAX_BATCH = 64;

/** `inTransaction`: whether the connection still holds a transaction (SQLite ends one itself on some errors). */
export function createGroupCommit(
  root: Kysely<Tables>,
  current: AsyncLocalStorage<OpenTransaction>,
  inTransaction: () => boolean,
): <T>(work: () => Promise<T>) => Promise<T> {
  let queue: Pending[] = [];
  let scheduled = false;

  const runBatch = async (batch: Pending[]): Promise<void> => {
    let trx: ControlledTransaction<Tables>;
    try {
      trx = await root.startTransaction().execute();
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    const done: { pending: Pending; value: unknown }[] = [];
    let broken = false;
    /** The database transaction is gone or cannot go on: nothing of the batch so far stays. */
    const lose = (error: unknown): void => {
      broken = true;
      for (const each of done) each.pending.reject(error);
      done.length = 0;
    };
    for (const pending of batch) {
      if (broken || !inTransaction()) {
        // An earlier failure ended the transaction: the rest start afresh in the next batch.
        queue.push(pending);
        continue;
      }
      let unit: ControlledTransaction<Tables, ['unit']> | undefined;
      const open: OpenTransaction = { trx: root, open: false };
      try {
        unit = await trx.savepoint('unit').execute();
        Object.assign(open, { trx: unit, open: true });
        const value = await current.run(open, pending.work);
        open.open = false;
        await unit.releaseSavepoint('unit').execute();
        done.push({ pending, value });
      } catch (error) {
        open.open = false;
        if (!inTransaction() || unit === undefined) lose(error);
        else await undo(unit).catch(lose);
        pending.reject(error);
      }
    }
    try {
      if (broken) throw new Error('the batch was lost');
      await trx.commit().execute();
    } catch (error) {
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      if (!broken) lose(error);
    }
    for (const each of done) each.pending.resolve(each.value);
  };

  /** Its work undone, the savepoint is let go, so the next transaction's takes its place. */
  const undo = async (unit: ControlledTransaction<Tables, ['unit']>): Promise<void> => {
    await unit.rollbackToSavepoint('unit').execute();
    await unit.releaseSavepoint('unit').execute();
  };

  const flush = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(MAX_BATCH);
      await runBatch(batch);
    }
    scheduled = false;
  };

  return <T>(work: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (scheduled) return;
      scheduled = true;
      // After this turn's I/O callbacks: every request read in this turn joins the batch.
      setImmediate(() => void flush());
    });
}

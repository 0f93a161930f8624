// Work under one key taking turns within this process, before it takes a database connection. Transactions that
// would only queue on the same row lock in the database (one user's executes, all debiting one wallet) otherwise
// each hold one of the pool's few connections while they wait, and the requests that have a deadline (a node's
// result and its poll, whose lease is running) wait behind them for a connection. SQLite has one connection and
// serialises its transactions itself, and those of one turn of the event loop share a commit (group-commit.ts):
// there, taking turns would only keep one user's executes out of each other's batch.
import type { Engine } from './store.js';

export type Turns = <T>(key: string, work: () => Promise<T>) => Promise<T>;

export function createTurns(engine: Engine): Turns {
  if (engine === 'sqlite') return (_key, work) => work();
  const tails = new Map<string, Promise<unknown>>();
  return (key, work) => {
    const previous = tails.get(key) ?? Promise.resolve();
    const mine = previous.then(work, work);
    const tail = mine.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return mine;
  };
}

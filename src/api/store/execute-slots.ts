// Executes share the PostgreSQL pool with everything else the service does, and one user's executes all lock one
// wallet row: fifty at once would each hold a connection while they queue for that lock, and a node's poll and its
// results, whose leases are running, would wait behind them for a connection until their leases ran out. So at most
// all connections but RESERVED do an execute's database work at once; the other executes wait in the process,
// holding nothing, and the reserved connections are always there for the rest. Each execute holds its connection
// for one statement on the common path (runs/execute-statement.ts), so the slots turn over fast; one user's
// executes no longer take turns. SQLite has one connection and serialises its transactions itself (those of one
// turn of the event loop share a commit, group-commit.ts): there the work goes at once.
import type { Store } from './store.js';

/** Connections kept from executes: a node's poll and its result each find one at once. */
const RESERVED = 2;

export type ExecuteSlots = <T>(work: () => Promise<T>) => Promise<T>;

export function createExecuteSlots(store: Pick<Store, 'engine' | 'connections'>): ExecuteSlots {
  if (store.engine === 'sqlite') return (work) => work();
  let free = Math.max(1, store.connections - RESERVED);
  const waiting: (() => void)[] = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next === undefined) free += 1;
    else next();
  };
  return async (work) => {
    if (free > 0) free -= 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      release();
    }
  };
}

// The wallet's transaction history as the console shows it (docs/api.md "Console"): the ledger's entries (funding,
// each run's charge, each refund), newest first, each with the balance it left. A balance changes only together
// with a ledger entry (ledger.ts), so the balance after an entry is today's balance less what every later entry
// added: no running total is stored, and none can drift from the books.
import { sql } from 'kysely';
import type { Store } from '../store/store.js';

export const TRANSACTIONS_SHOWN = 50;

export interface WalletTransaction {
  entry_id: number;
  kind: 'credit' | 'debit' | 'refund';
  /** Signed: what the entry did to the balance (a charge is negative). */
  change_cents: number;
  payment_id: string | null;
  run_id: string | null;
  agent_id: string | null;
  created_at: number;
  /** The balance right after this entry. */
  balance_after_cents: number;
}

export type WalletTransactions = (userId: string, limit?: number) => Promise<WalletTransaction[]>;

export function signedChange(kind: WalletTransaction['kind'], amountCents: number): number {
  return kind === 'debit' ? -amountCents : amountCents;
}

export function createWalletTransactions(store: Store): WalletTransactions {
  return async (userId, limit = TRANSACTIONS_SHOWN) => {
    const rows = await store.db
      .selectFrom('ledger_entries as e')
      .leftJoin('runs as r', 'r.run_id', 'e.run_id')
      .select(['e.entry_id', 'e.kind', 'e.amount_cents', 'e.payment_id', 'e.run_id', 'e.created_at', 'r.agent_id'])
      // Today's balance in the same statement, so on either engine it is of the same moment as the entries read.
      .select((eb) => eb.selectFrom('wallets as w').select('w.balance_cents').where('w.user_id', '=', userId).as('balance_now'))
      .where('e.user_id', '=', userId)
      // entry_id grows with every entry (autoincrement, identity): the order the books were written in.
      .orderBy(sql`e.entry_id`, 'desc')
      .limit(limit)
      .execute();
    let balance = Number(rows[0]?.balance_now ?? 0);
    return rows.map((row) => {
      const change = signedChange(row.kind, Number(row.amount_cents));
      const entry: WalletTransaction = {
        entry_id: Number(row.entry_id),
        kind: row.kind,
        change_cents: change,
        payment_id: row.payment_id,
        run_id: row.run_id,
        agent_id: row.agent_id ?? null,
        created_at: Number(row.created_at),
        balance_after_cents: balance,
      };
      balance -= change;
      return entry;
    });
  };
}

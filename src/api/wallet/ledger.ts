// The pay wallet's books (DECISIONS.md "Money", "Execute"). A balance changes only together with a ledger entry,
// in one transaction, and the debit checks `balance >= price` in the same UPDATE that takes the money, so no
// interleaving of requests can overdraw a wallet. Unique indexes make a payment credit once and a run debit once.
import type { Clock } from '../../lib/clock.js';
import type { SqliteDatabase } from '../../lib/sqlite.js';

export type DebitResult = { ok: true; balance_cents: number } | { ok: false; balance_cents: number };

export interface Ledger {
  balance(userId: string): number;
  /** Credits a confirmed wallet-fund payment; false when that payment was credited before. */
  creditPayment(entry: { user_id: string; payment_id: string; amount_cents: number }): boolean;
  /** Takes a run's price when the balance covers it. Call inside the transaction that records the run. */
  debitForRun(entry: { user_id: string; run_id: string; amount_cents: number }): DebitResult;
  /** Gives a failed run's charge back; returns the new balance. */
  refundRun(entry: { user_id: string; run_id: string; amount_cents: number }): number;
}

export function createLedger(db: SqliteDatabase, clock: Clock): Ledger {
  const selectBalance = db.prepare<[string], { balance_cents: number }>('SELECT balance_cents FROM wallets WHERE user_id = ?');
  const ensureWallet = db.prepare('INSERT INTO wallets (user_id, balance_cents, updated_at) VALUES (?, 0, ?) ON CONFLICT (user_id) DO NOTHING');
  const addToBalance = db.prepare('UPDATE wallets SET balance_cents = balance_cents + ?, updated_at = ? WHERE user_id = ?');
  const takeFromBalance = db.prepare(
    'UPDATE wallets SET balance_cents = balance_cents - ?, updated_at = ? WHERE user_id = ? AND balance_cents >= ?',
  );
  const paymentCredited = db.prepare<[string], { entry_id: number }>('SELECT entry_id FROM ledger_entries WHERE payment_id = ?');
  const insertEntry = db.prepare(
    'INSERT INTO ledger_entries (user_id, kind, amount_cents, payment_id, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );

  const balance = (userId: string): number => selectBalance.get(userId)?.balance_cents ?? 0;

  const creditPayment = db.transaction((entry: { user_id: string; payment_id: string; amount_cents: number }): boolean => {
    if (paymentCredited.get(entry.payment_id)) return false;
    const now = clock.now();
    ensureWallet.run(entry.user_id, now);
    if (entry.amount_cents > 0) {
      addToBalance.run(entry.amount_cents, now, entry.user_id);
      insertEntry.run(entry.user_id, 'credit', entry.amount_cents, entry.payment_id, null, now);
    }
    return true;
  });

  const debitForRun = db.transaction((entry: { user_id: string; run_id: string; amount_cents: number }): DebitResult => {
    const now = clock.now();
    const taken = takeFromBalance.run(entry.amount_cents, now, entry.user_id, entry.amount_cents).changes === 1;
    if (!taken) return { ok: false, balance_cents: balance(entry.user_id) };
    insertEntry.run(entry.user_id, 'debit', entry.amount_cents, null, entry.run_id, now);
    return { ok: true, balance_cents: balance(entry.user_id) };
  });

  const refundRun = db.transaction((entry: { user_id: string; run_id: string; amount_cents: number }): number => {
    const now = clock.now();
    addToBalance.run(entry.amount_cents, now, entry.user_id);
    insertEntry.run(entry.user_id, 'refund', entry.amount_cents, null, entry.run_id, now);
    return balance(entry.user_id);
  });

  return { balance, creditPayment, debitForRun, refundRun };
}

// The pay wallet's books (docs/decisions/0002-money-in-integer-cents.md, 0008-execute-debits-atomically.md). A
// balance changes only together with a ledger entry, in one transaction, and the debit checks `balance >= price` in
// the same UPDATE that takes the money, so no interleaving of requests can overdraw a wallet: on PostgreSQL too,
// where a concurrent UPDATE of the row waits for the other's commit and then evaluates the condition again on the
// new balance. Unique indexes make a payment credit once and a run debit once.
import { sql } from 'kysely';
import type { Clock } from '../../lib/clock.js';
import { compiledOnce } from '../store/compiled-once.js';
import type { Store } from '../store/store.js';

export type DebitResult = { ok: true; balance_cents: number } | { ok: false; balance_cents: number };

export interface Ledger {
  balance(userId: string): Promise<number>;
  /** Credits a confirmed wallet-fund payment; false when that payment was credited before. */
  creditPayment(entry: { user_id: string; payment_id: string; amount_cents: number }): Promise<boolean>;
  /** Takes a run's price when the balance covers it. Call inside the transaction that records the run. */
  debitForRun(entry: { user_id: string; run_id: string; amount_cents: number }): Promise<DebitResult>;
  /** Gives a failed run's charge back; returns the new balance. */
  refundRun(entry: { user_id: string; run_id: string; amount_cents: number }): Promise<number>;
}

export function createLedger(store: Store, clock: Clock): Ledger {
  // Every run reads the balance, takes its price and writes its entry: compiled once (compiled-once.ts).
  const balanceOf = compiledOnce((db, of: { userId: string }) =>
    db.selectFrom('wallets').select('balance_cents').where('user_id', '=', of.userId),
  );
  const take = compiledOnce((db, debit: { userId: string; cents: number; now: number }) =>
    db
      .updateTable('wallets')
      .set({ balance_cents: sql`balance_cents - ${debit.cents}`, updated_at: debit.now })
      .where('user_id', '=', debit.userId)
      .where('balance_cents', '>=', debit.cents)
      .returning('balance_cents'),
  );
  const insertEntry = compiledOnce(
    (
      db,
      entry: {
        user_id: string;
        kind: 'credit' | 'debit' | 'refund';
        amount_cents: number;
        payment_id: string | null;
        run_id: string | null;
        now: number;
      },
    ) =>
      db.insertInto('ledger_entries').values({
        user_id: entry.user_id,
        kind: entry.kind,
        amount_cents: entry.amount_cents,
        payment_id: entry.payment_id,
        run_id: entry.run_id,
        created_at: entry.now,
      }),
  );
  const balance = async (userId: string): Promise<number> => (await balanceOf(store.db, { userId })).rows[0]?.balance_cents ?? 0;

  const addToBalance = (userId: string, cents: number, now: number) =>
    store.db
      .updateTable('wallets')
      .set({ balance_cents: sql`balance_cents + ${cents}`, updated_at: now })
      .where('user_id', '=', userId)
      .execute();

  return {
    balance,

    creditPayment: (entry) =>
      store.transaction(async () => {
        // The payment's record is locked by the caller (payment-records.ts); the unique index on payment_id is the
        // last word if two credits of one payment ever raced.
        const credited = await store.db
          .selectFrom('ledger_entries')
          .select('entry_id')
          .where('payment_id', '=', entry.payment_id)
          .executeTakeFirst();
        if (credited !== undefined) return false;
        const now = clock.now();
        await store.db
          .insertInto('wallets')
          .values({ user_id: entry.user_id, balance_cents: 0, updated_at: now })
          .onConflict((conflict) => conflict.column('user_id').doNothing())
          .execute();
        if (entry.amount_cents > 0) {
          await addToBalance(entry.user_id, entry.amount_cents, now);
          await insertEntry(store.db, {
            user_id: entry.user_id,
            kind: 'credit',
            amount_cents: entry.amount_cents,
            payment_id: entry.payment_id,
            run_id: null,
            now,
          });
        }
        return true;
      }),

    debitForRun: (entry) =>
      store.transaction(async () => {
        const now = clock.now();
        const [taken] = (await take(store.db, { userId: entry.user_id, cents: entry.amount_cents, now })).rows;
        if (taken === undefined) return { ok: false, balance_cents: await balance(entry.user_id) };
        await insertEntry(store.db, {
          user_id: entry.user_id,
          kind: 'debit',
          amount_cents: entry.amount_cents,
          payment_id: null,
          run_id: entry.run_id,
          now,
        });
        return { ok: true, balance_cents: taken.balance_cents };
      }),

    refundRun: (entry) =>
      store.transaction(async () => {
        const now = clock.now();
        await addToBalance(entry.user_id, entry.amount_cents, now);
        await insertEntry(store.db, {
          user_id: entry.user_id,
          kind: 'refund',
          amount_cents: entry.amount_cents,
          payment_id: null,
          run_id: entry.run_id,
          now,
        });
        return balance(entry.user_id);
      }),
  };
}

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createLedger, type Ledger } from '../../src/api/wallet/ledger.js';
import { openSqliteStore, type SqliteStore } from '../../src/api/store/open-sqlite.js';
import type { SqliteDatabase } from '../../src/lib/sqlite.js';
import { MovableClock } from '../helpers/clock.js';
import { removeTempDirs, tempDir } from '../helpers/temp.js';

const USER = 'ada@example.com';

describe('ledger', () => {
  let store: SqliteStore;
  let db: SqliteDatabase;
  let ledger: Ledger;
  beforeEach(async () => {
    store = await openSqliteStore(join(tempDir('ledger-'), 'svc-api.db'));
    db = store.sqlite;
    ledger = createLedger(store, new MovableClock());
  });
  afterEach(async () => {
    await store.close();
    removeTempDirs();
  });

  function confirmedPayment(amountCents: number, email = USER): string {
    const paymentId = `pay_${randomUUID()}`;
    db.prepare(
      `INSERT INTO payments (payment_id, status, customer_email, offer_id, merchant_id, amount_cents, confirmed_at, recorded_at)
       VALUES (?, 'CONFIRMED', ?, 'svc_pay_wallet_fund', 'merchant_local', ?, 0, 0)`,
    ).run(paymentId, email, amountCents);
    return paymentId;
  }
  function entries() {
    return db
      .prepare('SELECT kind, amount_cents, payment_id IS NOT NULL AS has_payment, run_id FROM ledger_entries ORDER BY entry_id')
      .all();
  }
  /** The invariant of the books: every balance is the sum of its entries. */
  function expectBalancesMatchEntries(): void {
    const drift = db
      .prepare(
        `SELECT w.user_id, w.balance_cents, COALESCE(SUM(CASE e.kind WHEN 'debit' THEN -e.amount_cents ELSE e.amount_cents END), 0) AS sum
         FROM wallets w LEFT JOIN ledger_entries e ON e.user_id = w.user_id GROUP BY w.user_id HAVING w.balance_cents != sum`,
      )
      .all();
    expect(drift).toEqual([]);
  }

  it('starts every user at 0', async () => {
    expect(await ledger.balance('nobody@example.com')).toBe(0);
  });

  it('credits a payment once, however often it is reported', async () => {
    const paymentId = confirmedPayment(500);
    expect(await ledger.creditPayment({ user_id: USER, payment_id: paymentId, amount_cents: 500 })).toBe(true);
    expect(await ledger.creditPayment({ user_id: USER, payment_id: paymentId, amount_cents: 500 })).toBe(false);
    expect(await ledger.balance(USER)).toBe(500);
    expect(entries()).toEqual([{ kind: 'credit', amount_cents: 500, has_payment: 1, run_id: null }]);
  });

  it('debits when the balance covers the price, down to exactly 0', async () => {
    await ledger.creditPayment({ user_id: USER, payment_id: confirmedPayment(24), amount_cents: 24 });
    expect(await ledger.debitForRun({ user_id: USER, run_id: 'run-1', amount_cents: 12 })).toEqual({ ok: true, balance_cents: 12 });
    expect(await ledger.debitForRun({ user_id: USER, run_id: 'run-2', amount_cents: 12 })).toEqual({ ok: true, balance_cents: 0 });
    expect(await ledger.debitForRun({ user_id: USER, run_id: 'run-3', amount_cents: 4 })).toEqual({ ok: false, balance_cents: 0 });
    expect(entries()).toHaveLength(3);
    expectBalancesMatchEntries();
  });

  it('refuses a debit above the balance without writing anything', async () => {
    await ledger.creditPayment({ user_id: USER, payment_id: confirmedPayment(11), amount_cents: 11 });
    const before = entries();
    expect(await ledger.debitForRun({ user_id: USER, run_id: 'run-1', amount_cents: 12 })).toEqual({ ok: false, balance_cents: 11 });
    expect(await ledger.debitForRun({ user_id: 'nobody@example.com', run_id: 'run-2', amount_cents: 4 })).toEqual({
      ok: false,
      balance_cents: 0,
    });
    expect(entries()).toEqual(before);
    expect(await ledger.balance(USER)).toBe(11);
  });

  it('debits a run once and refunds it at most once', async () => {
    await ledger.creditPayment({ user_id: USER, payment_id: confirmedPayment(100), amount_cents: 100 });
    await ledger.debitForRun({ user_id: USER, run_id: 'run-1', amount_cents: 15 });
    await expect(ledger.debitForRun({ user_id: USER, run_id: 'run-1', amount_cents: 15 })).rejects.toThrow(/UNIQUE/);
    expect(await ledger.balance(USER)).toBe(85);
    expect(await ledger.refundRun({ user_id: USER, run_id: 'run-1', amount_cents: 15 })).toBe(100);
    await expect(ledger.refundRun({ user_id: USER, run_id: 'run-1', amount_cents: 15 })).rejects.toThrow(/UNIQUE/);
    expect(await ledger.balance(USER)).toBe(100);
    expectBalancesMatchEntries();
  });

  it('cannot be driven below zero even by a direct write', async () => {
    await ledger.creditPayment({ user_id: USER, payment_id: confirmedPayment(5), amount_cents: 5 });
    expect(() => db.prepare('UPDATE wallets SET balance_cents = balance_cents - 6 WHERE user_id = ?').run(USER)).toThrow(/CHECK/);
  });

  it('keeps every balance equal to the sum of its entries through a mixed history', async () => {
    const users = ['a@example.com', 'b@example.com', 'c@example.com'];
    for (const user of users) await ledger.creditPayment({ user_id: user, payment_id: confirmedPayment(50, user), amount_cents: 50 });
    const prices = [12, 8, 5, 15, 4];
    for (let i = 0; i < 60; i += 1) {
      const user = users[i % users.length]!;
      const runId = `run-${i}`;
      const debit = await ledger.debitForRun({ user_id: user, run_id: runId, amount_cents: prices[i % prices.length]! });
      if (debit.ok && i % 4 === 0) await ledger.refundRun({ user_id: user, run_id: runId, amount_cents: prices[i % prices.length]! });
      expect(await ledger.balance(user)).toBeGreaterThanOrEqual(0);
    }
    expectBalancesMatchEntries();
  });
});

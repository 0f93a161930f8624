// What a run moved in the wallet, from the ledger (wallet/ledger.ts): its debit when it was accepted and its refund
// when it failed or was cancelled, as the console's run page shows them. The ledger, not the run's charged_cents
// (0 once refunded), is what says how much came back and when.
import { isoTime } from '../../lib/clock.js';
import type { Store } from '../store/store.js';

export interface RunMoney {
  debited_cents: number;
  /** null: nothing came back. */
  refund: { amount_cents: number; at: string } | null;
}

export async function moneyOfRun(store: Store, userId: string, runId: string): Promise<RunMoney> {
  const entries = await store.db
    .selectFrom('ledger_entries')
    .select(['kind', 'amount_cents', 'created_at'])
    .where('run_id', '=', runId)
    .where('user_id', '=', userId)
    .orderBy('entry_id')
    .execute();
  const refunds = entries.filter((entry) => entry.kind === 'refund');
  return {
    debited_cents: entries.filter((entry) => entry.kind === 'debit').reduce((sum, entry) => sum + entry.amount_cents, 0),
    refund:
      refunds.length === 0
        ? null
        : { amount_cents: refunds.reduce((sum, entry) => sum + entry.amount_cents, 0), at: isoTime(refunds.at(-1)!.created_at) },
  };
}

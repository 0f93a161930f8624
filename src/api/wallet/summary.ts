// The wallet as GET /v1/swarm/wallet shows it: the ledger's balance in integer cents, on spec §8's chain.
import { CHAIN_ID } from '../../contract/claims.js';
import { normalizeEmail, type WalletResponse } from '../../contract/schemas.js';
import type { Ledger } from './ledger.js';

export async function walletSummary(ledger: Pick<Ledger, 'balance'>, userId: string): Promise<WalletResponse> {
  const user = normalizeEmail(userId);
  return { user_id: user, balance_cents: await ledger.balance(user), currency: 'USD', chain_id: CHAIN_ID };
}

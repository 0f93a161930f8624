// The wallet page's "fund wallet" form in sandbox mode goes the way real money would: a checkout at the sandbox
// provider for the wallet-fund offer, its confirmation, and the provider's signed webhook that credits the ledger.
// The provider is called over real HTTP, as any client of it would, never through its tables.
import { SvcError } from '../../contract/errors.js';
import type { TierId } from '../../contract/tiers.js';
import type { ServiceContext } from '../context.js';

const WALLET_FUND_OFFER: TierId = 'svc_pay_wallet_fund';
/** The sandbox is for trying the flow: a bound keeps a typo from minting a fortune. */
export const MAX_SANDBOX_FUNDING_CENTS = 100_000;
const PROVIDER_TIMEOUT_MS = 5_000;
const CREDIT_WAIT_MS = 5_000;
const CREDIT_POLL_MS = 25;

export type FundingResult = { credited: true; payment_id: string } | { credited: false; payment_id: string };

export async function fundThroughSandbox(ctx: ServiceContext, userId: string, amountCents: number): Promise<FundingResult> {
  const created = await callProvider(ctx, '/sandbox/payments', {
    offer_id: WALLET_FUND_OFFER,
    customer_email: userId,
    amount_cents: amountCents,
  });
  const paymentId = created.payment_id;
  if (typeof paymentId !== 'string' || !/^[A-Za-z0-9_.:-]{1,128}$/.test(paymentId)) {
    throw new SvcError('service_unavailable', 'the sandbox payment provider gave no payment id');
  }
  await callProvider(ctx, `/sandbox/payments/${encodeURIComponent(paymentId)}/confirm`, undefined);
  return { credited: await waitForCredit(ctx, paymentId), payment_id: paymentId };
}

async function callProvider(ctx: ServiceContext, path: string, body: unknown): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(`${ctx.urls.baseUrl}${path}`, {
      method: 'POST',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
    });
  } catch (error) {
    throw new SvcError('service_unavailable', 'the sandbox payment provider did not answer', { cause: error });
  }
  const parsed: unknown = await response.json().catch(() => undefined);
  if (!response.ok || typeof parsed !== 'object' || parsed === null) {
    throw new SvcError('service_unavailable', `the sandbox payment provider answered HTTP ${response.status}`);
  }
  return parsed as Record<string, unknown>;
}

/** The webhook arrives on its own; the page waits for its credit a little so the balance shown already has it. */
async function waitForCredit(ctx: ServiceContext, paymentId: string): Promise<boolean> {
  const credited = () =>
    ctx.store.db.selectFrom('ledger_entries').select('entry_id').where('payment_id', '=', paymentId).executeTakeFirst();
  // A bound on real waiting, not a business time: it does not follow the service's clock.
  const deadline = performance.now() + CREDIT_WAIT_MS;
  for (;;) {
    if ((await credited()) !== undefined) return true;
    if (performance.now() > deadline || ctx.shutdownSignal.aborted) return false;
    await new Promise((resolve) => setTimeout(resolve, CREDIT_POLL_MS));
  }
}

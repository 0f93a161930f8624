// What every route of the service is given. Routes take it as an argument (no globals), so a test builds a
// service with a real SQLite file, a clock it controls and the real provider and runtime.
import type { SqliteDatabase } from '../lib/sqlite.js';
import type { Clock } from '../lib/clock.js';
import type { Ledger } from './wallet/ledger.js';
import type { RateLimitStore } from './http/rate-limit.js';
import type { ServiceSecrets } from './secrets.js';
import type { TokenService } from './auth/tokens.js';

/** A payment as the provider reports it (DECISIONS.md "Payment provider and its webhook"). */
export interface ProviderPayment {
  payment_id: string;
  status: string;
  customer_email: string;
  offer_id: string;
  merchant_id: string;
  amount_cents: number;
}

/** The one adapter between the service and the external payment provider. */
export interface PaymentProvider {
  /** The provider's current word on a payment, or null when it has no such payment. */
  lookupPayment(paymentId: string): Promise<ProviderPayment | null>;
}

export interface AgentRunInput {
  run_id: string;
  agent_id: string;
  user_id: string;
}

/** Does an agent's work for one run (DECISIONS.md "Execute"). Rejects when the run failed. */
export interface AgentRuntime {
  run(input: AgentRunInput, signal: AbortSignal): Promise<unknown>;
}

export interface PublicUrls {
  /** Where clients reach the API, for example http://127.0.0.1:8787. */
  baseUrl: string;
  /** The wallet's public base; the login page is at {walletUrl}/login. */
  walletUrl: string;
}

export interface ServiceContext {
  db: SqliteDatabase;
  clock: Clock;
  secrets: ServiceSecrets;
  tokens: TokenService;
  ledger: Ledger;
  merchantId: string;
  /** True when svc-api runs its sandbox payment provider (svc-api --sandbox). */
  sandbox: boolean;
  provider: PaymentProvider;
  runtime: AgentRuntime;
  /** Known only after listen when the port is 0; routes read it per request. */
  urls: PublicUrls;
  /** Per client address, per minute, one budget across the auth, paygate, enroll and wallet sign-in endpoints. */
  rateLimitPerMinute: number;
  /** Where those budgets are counted (src/api/rate-limit.ts). */
  rateLimitStore: RateLimitStore;
  /** Aborted when the service starts closing: background work (webhook delivery, runs) stops retrying. */
  shutdownSignal: AbortSignal;
  /** Background work the service waits for (bounded) before it closes the database. */
  background: Set<Promise<unknown>>;
}

export function runInBackground(ctx: ServiceContext, work: Promise<unknown>): void {
  const tracked = work.catch(() => undefined).finally(() => ctx.background.delete(tracked));
  ctx.background.add(tracked);
}

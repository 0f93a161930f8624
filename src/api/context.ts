// What every route of the service is given. Routes take it as an argument (no globals), so a test builds a
// service with a real SQLite file, a clock it controls and the real provider and runtime.
import { DEFAULT_QUEUE_SECONDS } from '../contract/job-limits.js';
import type { Store } from './store/store.js';
import type { Clock } from '../lib/clock.js';
import type { RunEvents } from './runs/run-events.js';
import type { Ledger } from './wallet/ledger.js';
import type { RateLimitStore } from './http/rate-limit.js';
import type { ServiceSecrets } from './secrets.js';
import type { TokenService } from './auth/tokens.js';
import { isDatabaseError, type ServiceMetrics } from './ops/metrics.js';
import type { StoreProbe } from './ops/store-probe.js';
import type { Mailer } from './mail/mailer.js';
import type { Revocations } from './auth/revocations.js';
import type { AuditLog } from './audit/audit-log.js';
import type { UploadQuota } from './agents/upload-quota.js';
import type { Vault } from './vault/vault.js';
import type { ResendLimit } from './webhooks/resend-limit.js';
import type { WebhookDelivery } from './webhooks/webhook-options.js';
import type { ArtifactSettings } from './artifacts/artifact-limits.js';

/** A payment as the provider reports it (docs/decisions/0007-payment-provider.md). */
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
  /**
   * The provider's current word on a payment, or null when it has no such payment. Throws an SvcError when the
   * provider cannot be asked (503) or its payment is not one the service can take (422).
   */
  lookupPayment(paymentId: string): Promise<ProviderPayment | null>;
  /** The provider's own signed webhook, when it has one (Stripe); the service's Svc-Signature scheme is always taken. */
  webhook?: ProviderWebhook;
}

/** A delivery whose signature the provider's webhook verified. */
export interface ProviderEvent {
  id: string;
  type: string;
  /** The event as the provider sent it, for paymentOf. */
  payload: unknown;
}

export interface ProviderWebhook {
  /** The header the provider signs its deliveries in (lowercase). */
  signatureHeader: string;
  /** The event when the signature matches the raw body and is recent, else a 401 SvcError. */
  verify(rawBody: Buffer, signature: string | string[] | undefined, nowMs: number): ProviderEvent;
  /**
   * The CONFIRMED payment the event reports, or undefined for an event the service ignores; an SvcError for one it
   * refuses (an unknown offer, an amount that is not the offer's price).
   */
  paymentOf(event: ProviderEvent): Promise<ProviderPayment | undefined>;
}

/** The clocks of runs on the nodes (docs/api.md "Runs on the node"); svc-api's flags set them, tests shorten them. */
export interface RunTiming {
  /** How long a node's hold on a run lasts without a renewal (its poll); also how long a node counts as online after its last poll. */
  leaseMs: number;
  /** The longest a node's poll is held open while there is no work for it. */
  pollHoldMs: number;
  /** The longest execute waits for the node's result before it answers 202 with the run as it stands. */
  executeWaitMs: number;
  /** How long a run waits for a node when execute names no queue_seconds; then it is failed (not_picked_up) and refunded. */
  queueTimeoutMs: number;
  /** How often expired leases and stranded queued runs are looked for. */
  sweepMs: number;
  /**
   * How long a running run's node has to stop it and say so once its user cancelled it: it learns at its next poll
   * (a held poll ends at once), so seconds; past this the sweep ends the run here, refunded (docs/api.md "Cancel").
   */
  cancelGraceMs: number;
}

export const DEFAULT_RUN_TIMING: RunTiming = {
  leaseMs: 45_000,
  pollHoldMs: 20_000,
  executeWaitMs: 30_000,
  queueTimeoutMs: DEFAULT_QUEUE_SECONDS * 1000,
  sweepMs: 1_000,
  cancelGraceMs: 30_000,
};

/**
 * The timing in force. A held poll is the node's heartbeat, and a node counts as online for a lease after it was
 * last seen: so a poll is held at most half a lease. Otherwise a lease shorter than the hold (`--lease-seconds 5`)
 * would show a node that waits for work offline, and refuse its runs with no_node_available.
 */
export function resolveRunTiming(given: Partial<RunTiming> = {}): RunTiming {
  const timing = { ...DEFAULT_RUN_TIMING, ...given };
  return { ...timing, pollHoldMs: Math.min(timing.pollHoldMs, Math.floor(timing.leaseMs / 2)) };
}

/** What one user may upload and keep (docs/api.md "Agent upload", "Quota and retention"); svc-api's flags. */
export interface UploadLimits {
  quota: UploadQuota;
  /** Upload requests a user may make in an hour; 0: no limit. */
  uploadsPerHour: number;
  /** What one run of an agent of the user's own costs (docs/api.md "Agents of one's own"). */
  ownAgentPriceCents: number;
}

/** The per-run price of users' own agents (svc-api --own-agent-price-cents); default DEFAULT_OWN_AGENT_PRICE_CENTS. */
export interface OwnAgentPricing {
  ownAgentPriceCents?: number;
}

export { DEFAULT_OWN_AGENT_PRICE_CENTS } from '../contract/own-agents.js';

export interface PublicUrls {
  /** Where this process listens, for example http://127.0.0.1:8787: its own calls to itself (the sandbox's webhook). */
  baseUrl: string;
  /** Where clients reach the API (SVC_PUBLIC_URL; the listening address when unset): what the service tells them. */
  publicUrl: string;
  /** The wallet's public base; the login page is at {walletUrl}/login. */
  walletUrl: string;
}

export interface ServiceContext {
  /** SQLite or PostgreSQL (src/api/store/store.ts). */
  store: Store;
  clock: Clock;
  secrets: ServiceSecrets;
  /** Seals users' secrets and webhook signing secrets at rest (vault/vault.ts; SVC_SECRETS_KEY). */
  vault: Vault;
  /** Where webhook deliveries may go and which certificates they trust (svc-api --webhook-allow-private, --webhook-ca-file). */
  webhookDelivery: WebhookDelivery;
  /** Re-sends of each endpoint's deliveries, counted for the API and the console alike (webhooks/resend-limit.ts). */
  webhookResends: ResendLimit;
  tokens: TokenService;
  /** Revoked access tokens, in memory and kept current from the database (auth/revocations.ts). */
  revocations: Revocations;
  /** Sign-in codes and what users are told (mail/mailer.ts). */
  mailer: Mailer;
  /** What users can look back on (GET /v1/audit). */
  audit: AuditLog;
  ledger: Ledger;
  merchantId: string;
  /** True when svc-api runs its sandbox payment provider (svc-api --sandbox). */
  sandbox: boolean;
  provider: PaymentProvider;
  runTiming: RunTiming;
  /** Who waits for which run and for work (execute, a node's poll); one per service, shared by every route. */
  runEvents: RunEvents;
  /** Known only after listen when the port is 0; routes read it per request. */
  urls: PublicUrls;
  /** Per client address, per minute, one budget across the auth, paygate, enroll and wallet sign-in endpoints. */
  rateLimitPerMinute: number;
  /** Where those budgets are counted (src/api/rate-limit.ts). */
  rateLimitStore: RateLimitStore;
  /** Aborted when the service starts to stop: long polls answer at once; results of runs in flight still come in. */
  drainSignal: AbortSignal;
  /** Aborted when the drain's grace is over: executes still waiting answer 202, background work stops retrying. */
  shutdownSignal: AbortSignal;
  /** The upload quota and rate (src/api/agents/upload-quota.ts, upload-rate.ts). */
  uploadLimits: UploadLimits;
  /** Sign-in codes one client address may ask for in an hour (auth/email-codes.ts). */
  signInCodesPerClient: number;
  /** Runs' artifacts: their caps, quota and retention, and where uploads are received (artifacts/artifact-limits.ts). */
  artifacts: ArtifactSettings;
  /** Where the releases it serves are (svc-api --releases-dir; docs/api.md "Releases"); undefined: it serves none. */
  releasesDir?: string | undefined;
  /** Background work the service waits for (bounded) before it closes the database. */
  background: Set<Promise<unknown>>;
  /** What this instance counts for Prometheus (src/api/ops/metrics.ts). */
  metrics: ServiceMetrics;
  /** The database as readiness and the metrics' gauges ask it (src/api/ops/store-probe.ts); one per storage engine. */
  storeProbe: StoreProbe;
}

export function runInBackground(ctx: ServiceContext, work: Promise<unknown>): void {
  const tracked = work.catch(() => undefined).finally(() => ctx.background.delete(tracked));
  ctx.background.add(tracked);
}

/**
 * Runs `work` every `everyMs` (the next round `everyMs` after the last ended, so a slow one never overlaps the next)
 * until the service closes. A round that fails is logged, and the next one tries again: a busy, full or unreachable
 * database leaves things as they are meanwhile.
 */
/** What a round of repeatInBackground may answer: the next round that soon, when sooner than its pace. */
export interface WakeIn {
  wakeInMs: number;
}

export function repeatInBackground(
  ctx: ServiceContext,
  work: () => Promise<unknown>,
  everyMs: number,
  what: string,
  log: { warn(details: object, message: string): void },
): void {
  let timer: NodeJS.Timeout | undefined;
  ctx.shutdownSignal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  // A round that answers {wakeInMs} wants the next one that soon, if sooner than everyMs.
  const next = (answer?: unknown): void => {
    if (ctx.shutdownSignal.aborted) return;
    const sooner = (answer as Partial<WakeIn> | undefined)?.wakeInMs;
    const wait = typeof sooner === 'number' ? Math.max(0, Math.min(everyMs, sooner)) : everyMs;
    timer = setTimeout(() => {
      const round = work().catch((error: unknown) => log.warn({ err: error }, `${what} failed`));
      runInBackground(ctx, round);
      void round.then(next);
    }, wait);
    timer.unref();
  };
  next();
}

/**
 * Runs `round` with the run sweeps (every `sweepMs`) once `everyMs` of the service's clock has passed since the last
 * round, so that a test moving the clock sees it within a sweep; a clock set back makes a round due too, rather than
 * none until it catches up. A round answering true (its batch was full) comes again at the next sweep.
 */
export function repeatByServiceClock(
  ctx: ServiceContext,
  everyMs: number,
  round: (now: number) => Promise<boolean>,
  what: string,
  log: { warn(details: object, message: string): void },
): void {
  let lastRoundAt: number | undefined;
  const sweep = async (): Promise<void> => {
    const now = ctx.clock.now();
    if (lastRoundAt !== undefined && now >= lastRoundAt && now - lastRoundAt < everyMs) return;
    lastRoundAt = now;
    try {
      if (await round(now)) lastRoundAt = undefined;
    } catch (error) {
      if (isDatabaseError(error)) ctx.metrics.databaseError('sweep');
      throw error;
    }
  };
  repeatInBackground(ctx, sweep, ctx.runTiming.sweepMs, what, log);
}

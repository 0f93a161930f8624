// Starts and stops the service: opens the store, loads the secrets, sweeps the runs whose time is up, listens, and on
// close lets the requests in flight finish (bounded by a grace: executes waiting for a node's result, which still
// comes in meanwhile), then closes the database. Runs on the nodes go on: their results reach the next start.
import { setMaxListeners } from 'node:events';
import { mkdirSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { systemClock } from '../lib/clock.js';
import { databaseClock } from './store/database-clock.js';
import type { SqliteDatabase } from '../lib/sqlite.js';
import { buildApp } from './app.js';
import { createLedger } from './wallet/ledger.js';
import { DEFAULT_OWN_AGENT_PRICE_CENTS, repeatInBackground, resolveRunTiming, type ServiceContext } from './context.js';
import { openStore } from './store/open-store.js';
import type { Store } from './store/store.js';
import { createPaymentProvider, paymentProviderConfigOf } from './payments/provider.js';
import { createMemoryRateLimitStore } from './http/rate-limit.js';
import { scheduleSweeps, sweepRuns } from './runs/lease-sweeper.js';
import { createRunEvents } from './runs/run-events.js';
import { createRuns } from './runs/runs.js';
import { DEFAULT_STALE_NODE_AFTER_MS, scheduleStaleNodeSweep } from './nodes/stale-node-sweeper.js';
import { createRequestDrain, type RequestDrain } from './http/request-drain.js';
import { loadSecrets, type ServiceSecrets } from './secrets.js';
import { loadVault } from './vault/vault-keys.js';
import { scheduleReseal } from './vault/reseal.js';
import { scheduleWebhookDelivery } from './webhooks/delivery-worker.js';
import { scheduleScheduler } from './schedules/scheduler.js';
import { createResendLimit } from './webhooks/resend-limit.js';
import { WAL_CHECKPOINT_INTERVAL_MS, checkpointWal, scheduleWalCheckpoint } from './store/wal-checkpoint.js';
import { createTokenService } from './auth/tokens.js';
import { createRevocations, REVOCATION_POLL_MS } from './auth/revocations.js';
import { CODES_PER_CLIENT } from './auth/email-codes.js';
import { createAuditLog } from './audit/audit-log.js';
import { createMailer, DEFAULT_MAIL_FROM } from './mail/mailer.js';
import { createServiceMetrics, isDatabaseError } from './ops/metrics.js';
import { startMetricsServer, type MetricsServer } from './ops/metrics-server.js';
import { createStoreProbe } from './ops/store-probe.js';
import { DEFAULT_BODY_TIMEOUT } from './http/body-timeout.js';
import { DEFAULT_CONNECTION_TIMEOUTS } from './http/connection-timeouts.js';
import { capConnectionsPerAddress, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from './http/connection-cap.js';
import { DEFAULT_UPLOAD_QUOTA } from './agents/upload-quota.js';
import { DEFAULT_UPLOADS_PER_HOUR } from './agents/upload-rate.js';
import { DEFAULT_VERSION_RETENTION_MS, scheduleVersionRetention } from './agents/version-retention.js';
import { scheduleLogRetention } from './run-logs/log-retention.js';
import { artifactSettings } from './artifacts/artifact-limits.js';
import { scheduleArtifactRetention } from './artifacts/artifact-retention.js';

import type { ServiceOptions } from './service-options.js';
export type { ServiceOptions };

export interface RunningService {
  app: FastifyInstance;
  ctx: ServiceContext;
  store: Store;
  /** The SQLite connection when that is the engine; undefined on PostgreSQL (SVC_DATABASE_URL). */
  db: SqliteDatabase | undefined;
  secrets: ServiceSecrets;
  baseUrl: string;
  walletUrl: string;
  /** http://host:port/metrics when metricsListen was given. */
  metricsUrl: string | undefined;
  /**
   * Stops taking requests (but the results of runs in flight), gives those in flight `graceMs` to finish (default
   * DEFAULT_SHUTDOWN_GRACE_MS; an execute still waiting then answers 202, its run goes on), and closes the database.
   * A later call with a shorter grace cuts the wait short (a second SIGTERM).
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Below systemd's default stop timeout (TimeoutStopSec, 30 s) with room for the rest of the stop: past that timeout
 * systemd kills the process, and a run cut that way is refunded only at the next start.
 */
export const DEFAULT_SHUTDOWN_GRACE_MS = 25_000;
/** After the grace: how long the last answers (202s) and the background work (webhook delivery) may take. */
const AFTER_GRACE_MS = 5_000;

export const SMTP_URL_REQUIRED =
  'SVC_SMTP_URL is required: svc-api signs users in with a code it mails them (smtp://user:password@relay:587); only --sandbox runs without one, keeping its mail in the sandbox outbox';

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const env = options.env ?? process.env;
  const host = options.host ?? '127.0.0.1';
  const sandbox = options.sandbox ?? false;
  const merchantId = env.SVC_MERCHANT_ID ?? 'merchant_local';
  const providerConfig = paymentProviderConfigOf(env, sandbox);
  // Sign-in is a code mailed to the address: a service that cannot mail signs nobody in (docs/api.md "Mail").
  if (!sandbox && env.SVC_SMTP_URL === undefined) throw new Error(SMTP_URL_REQUIRED);
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const secrets = loadSecrets(options.dataDir, env);
  const vault = loadVault(options.dataDir, env);
  // Logged once the app (and its logger) exists; until then an idle connection's failure is only counted on.
  let log: FastifyInstance['log'] | undefined;
  const { store, sqlite: db } = await openStore({
    dataDir: options.dataDir,
    databaseUrl: env.SVC_DATABASE_URL,
    onIdleError: (error) => log?.warn({ err: error }, 'a database connection failed; the pool opens another at the next query'),
  });
  const shutdown = new AbortController();
  const draining = new AbortController();
  // PostgreSQL: the database's clock, so that every instance decides leases, online nodes and sweeps alike.
  const clock = options.clock ?? (store.engine === 'postgres' ? await databaseClock(store, shutdown.signal) : systemClock);
  // Every held poll and every waiting execute listens for the drain: hundreds at once are normal, not a leak.
  setMaxListeners(0, shutdown.signal, draining.signal);
  const runTiming = resolveRunTiming(options.runTiming);
  const storeProbe = createStoreProbe(store);
  const revocations = createRevocations(store, clock);
  const mailer = createMailer({ smtpUrl: env.SVC_SMTP_URL, from: env.SVC_MAIL_FROM ?? DEFAULT_MAIL_FROM, sandbox, store, clock });

  const ctx: ServiceContext = {
    store,
    clock,
    secrets,
    vault,
    webhookDelivery: {
      allowPrivate: options.webhookAllowPrivate ?? false,
      ...(options.webhookCa === undefined ? {} : { ca: options.webhookCa }),
    },
    webhookResends: createResendLimit(clock),
    tokens: createTokenService(secrets, clock, {
      revocations,
      issueRecord: (jti) =>
        store.db
          .selectFrom('issued_tokens')
          .select(['sub', 'issued_at', 'revoked_at'])
          .where('jti', '=', jti)
          .executeTakeFirst()
          .then((row) => (row === undefined ? undefined : { sub: row.sub, issued_at: row.issued_at, revoked: row.revoked_at !== null })),
    }),
    revocations,
    mailer,
    audit: createAuditLog(store, clock),
    ledger: createLedger(store, clock),
    merchantId,
    sandbox,
    provider: await createPaymentProvider({ store, sandbox, config: providerConfig, merchantId }),
    runTiming,
    // Waiters also look at the database: another instance's results, a wake-up lost to a race.
    runEvents: createRunEvents(Math.min(500, runTiming.sweepMs), store.notifications),
    urls: { baseUrl: '', publicUrl: '', walletUrl: '' },
    rateLimitPerMinute: options.rateLimitPerMinute ?? 600,
    rateLimitStore: createMemoryRateLimitStore(),
    drainSignal: draining.signal,
    shutdownSignal: shutdown.signal,
    background: new Set(),
    storeProbe,
    metrics: createServiceMetrics({ probe: storeProbe, onlineSince: () => clock.now() - runTiming.leaseMs }),
    releasesDir: options.releasesDir,
    uploadLimits: {
      quota: { ...DEFAULT_UPLOAD_QUOTA, ...options.uploadQuota },
      uploadsPerHour: options.uploadsPerHour ?? DEFAULT_UPLOADS_PER_HOUR,
      ownAgentPriceCents: options.ownAgentPriceCents ?? DEFAULT_OWN_AGENT_PRICE_CENTS,
    },
    signInCodesPerClient: options.signInCodesPerClient ?? CODES_PER_CLIENT,
    artifacts: artifactSettings(options.dataDir, options.artifactLimits),
  };

  // Runs whose lease ran out while the service was down are failed and refunded before the first request; a run a
  // node still holds is left to it (its result comes in, or its lease runs out at a later sweep).
  const runs = createRuns(ctx);
  // On PostgreSQL another instance may be serving runs meanwhile: the sweep touches only runs whose lease or queue
  // time is up, so it never fails a run a live instance's node still holds.
  const sweep = async (): Promise<void> => {
    try {
      await sweepRuns(ctx, runs.store, runs.finish, ctx.runEvents);
    } catch (error) {
      if (isDatabaseError(error)) ctx.metrics.databaseError('sweep');
      throw error;
    }
  };
  let app: FastifyInstance;
  try {
    await sweep();
    await revocations.refresh();
    app = await buildApp(ctx, {
      logger: options.logger ?? false,
      trustProxy: options.trustProxy,
      bodyTimeout: { ...DEFAULT_BODY_TIMEOUT, ...options.bodyTimeout },
      connectionTimeouts: { ...DEFAULT_CONNECTION_TIMEOUTS, ...options.connectionTimeouts },
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  log = app.log;
  scheduleSweeps(ctx, sweep, app.log);
  // Revocations made on another instance are refused here within a second (docs/api.md "Revocation and sessions").
  repeatInBackground(ctx, () => revocations.refresh(), REVOCATION_POLL_MS, 'reading revoked tokens', app.log);
  scheduleStaleNodeSweep(ctx, options.staleNodeAfterMs ?? DEFAULT_STALE_NODE_AFTER_MS, app.log);
  scheduleVersionRetention(ctx, options.versionRetentionMs ?? DEFAULT_VERSION_RETENTION_MS, app.log);
  scheduleReseal(ctx, app.log);
  scheduleWebhookDelivery(ctx, app.log);
  scheduleScheduler(ctx, app.log);
  scheduleLogRetention(ctx, app.log);
  scheduleArtifactRetention(ctx, app.log);
  if (db !== undefined) {
    scheduleWalCheckpoint(db, {
      intervalMs: options.walCheckpointIntervalMs ?? WAL_CHECKPOINT_INTERVAL_MS,
      signal: shutdown.signal,
      log: app.log,
    });
  }
  const drain = createRequestDrain(app);
  capConnectionsPerAddress(app.server, {
    max: options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    trustProxy: options.trustProxy ?? false,
    onRefused: (address, open) =>
      app.log.warn(
        { address, open },
        'connections refused: this address holds the most connections allowed (--max-connections-per-address)',
      ),
  });
  let metricsServer: MetricsServer | undefined;
  try {
    await app.listen({ host, port: options.port ?? 0 });
    if (options.metricsListen !== undefined) metricsServer = await startMetricsServer(options.metricsListen, ctx.metrics.registry, app.log);
  } catch (error) {
    draining.abort();
    shutdown.abort();
    await app.close();
    await store.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  ctx.urls.baseUrl = `http://${urlHost}:${port}`;
  // What clients are told to use (install.sh, release URLs): the operator's word, never a request's Host header.
  ctx.urls.publicUrl = (env.SVC_PUBLIC_URL ?? ctx.urls.baseUrl).replace(/\/+$/, '');
  ctx.urls.walletUrl = (env.SVC_WALLET_URL ?? `${ctx.urls.publicUrl}/wallet`).replace(/\/+$/, '');

  const grace = new GraceTimer();
  let closing: Promise<void> | undefined;
  return {
    app,
    ctx,
    store,
    db,
    secrets,
    baseUrl: ctx.urls.baseUrl,
    walletUrl: ctx.urls.walletUrl,
    metricsUrl: metricsServer?.url,
    close(closeOptions = {}) {
      grace.endWithin(closeOptions.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
      closing ??= stopService(app, drain, grace.over, { draining, shutdown }, ctx.background).then(async () => {
        // Scraped until the end: the last figures of a stopping instance are the ones worth having.
        await metricsServer?.close();
        // Closing deletes the log only when no other connection (a backup, a shell) has the file open.
        if (db !== undefined) checkpointWal(db, app.log);
        await mailer.close();
        await store.close();
      });
      return closing;
    },
  };
}

async function stopService(
  app: FastifyInstance,
  drain: RequestDrain,
  graceOver: AbortSignal,
  signals: { draining: AbortController; shutdown: AbortController },
  background: Set<Promise<unknown>>,
): Promise<void> {
  drain.begin();
  // Long polls answer now (their nodes poll again later, or elsewhere); executes keep waiting for their results.
  signals.draining.abort();
  app.log.info({ in_flight_requests: drain.inFlight }, 'stopping: no new requests but results, waiting for those in flight');
  if (!(await drain.settled(graceOver))) {
    app.log.warn({ in_flight_requests: drain.inFlight }, 'shutdown grace over: executes still waiting answer 202; their runs go on');
  }
  // ctx.shutdownSignal: executes still waiting answer 202, background work (webhook delivery, the sweeps) stops.
  signals.shutdown.abort();
  const afterGrace = AbortSignal.timeout(AFTER_GRACE_MS);
  await drain.settled(afterGrace);
  await Promise.race([Promise.allSettled([...background]), abortOf(afterGrace)]);
  drain.closeConnections();
  await app.close();
  app.log.info('stopped');
}

function abortOf(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** The end of the grace: set by the first close, brought forward by a later one with a shorter grace. */
class GraceTimer {
  readonly #controller = new AbortController();
  #deadline = Number.POSITIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;

  get over(): AbortSignal {
    return this.#controller.signal;
  }

  endWithin(ms: number): void {
    const deadline = performance.now() + ms;
    if (deadline >= this.#deadline) return;
    this.#deadline = deadline;
    clearTimeout(this.#timer);
    // Unreferenced: a drain that ends early must not keep the process alive until the grace is over.
    this.#timer = setTimeout(() => this.#controller.abort(), ms).unref();
  }
}

// Starts and stops the service: opens the store, loads the secrets, listens, and on close finishes in-flight
// requests and background work before the database closes.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { systemClock, type Clock } from '../lib/clock.js';
import { openDatabase, type SqliteDatabase } from '../lib/sqlite.js';
import { buildApp } from './app.js';
import { createLedger } from './ledger.js';
import type { AgentRuntime, ServiceContext } from './context.js';
import { SERVICE_MIGRATIONS } from './migrations.js';
import { createPaymentProvider } from './payments/provider.js';
import { createMemoryRateLimitStore } from './rate-limit.js';
import { recoverInterruptedRuns, scheduleIdempotencyKeyPurge } from './execute/recover-runs.js';
import { createAgentRuntime } from './runtime/agent-runtime.js';
import { loadSecrets, type ServiceSecrets } from './secrets.js';
import { WAL_CHECKPOINT_INTERVAL_MS, checkpointWal, scheduleWalCheckpoint } from './wal-checkpoint.js';
import { createTokenService } from './tokens.js';
import type { TrustProxy } from './trust-proxy.js';

export interface ServiceOptions {
  host?: string;
  port?: number;
  dataDir: string;
  sandbox?: boolean;
  clock?: Clock;
  env?: NodeJS.ProcessEnv;
  logger?: FastifyServerOptions['logger'];
  rateLimitPerMinute?: number;
  /** Peers whose X-Forwarded-For names the client (svc-api --trust-proxy); none by default. */
  trustProxy?: TrustProxy;
  /** Command run per agent run (JSON on stdin, JSON on stdout); without one the sandbox runtime answers. */
  agentCommand?: string[];
  agentTimeoutMs?: number;
  runtime?: AgentRuntime;
  /** How often the WAL is emptied (src/api/wal-checkpoint.ts); tests shorten it. */
  walCheckpointIntervalMs?: number;
}

export interface RunningService {
  app: FastifyInstance;
  ctx: ServiceContext;
  db: SqliteDatabase;
  secrets: ServiceSecrets;
  baseUrl: string;
  walletUrl: string;
  close(): Promise<void>;
}

const BACKGROUND_DRAIN_MS = 5_000;

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const env = options.env ?? process.env;
  const host = options.host ?? '127.0.0.1';
  const clock = options.clock ?? systemClock;
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const secrets = loadSecrets(options.dataDir, env);
  const db = openDatabase(join(options.dataDir, 'svc-api.db'), { migrations: SERVICE_MIGRATIONS });
  const shutdown = new AbortController();
  const sandbox = options.sandbox ?? false;

  const ctx: ServiceContext = {
    db,
    clock,
    secrets,
    tokens: createTokenService(secrets, clock),
    ledger: createLedger(db, clock),
    merchantId: env.SVC_MERCHANT_ID ?? 'merchant_local',
    sandbox,
    provider: createPaymentProvider({ db, sandbox }),
    runtime:
      options.runtime ??
      createAgentRuntime({
        ...(options.agentCommand ? { command: options.agentCommand } : {}),
        timeoutMs: options.agentTimeoutMs ?? 30_000,
      }),
    urls: { baseUrl: '', walletUrl: '' },
    rateLimitPerMinute: options.rateLimitPerMinute ?? 600,
    rateLimitStore: createMemoryRateLimitStore(),
    shutdownSignal: shutdown.signal,
    background: new Set(),
  };

  // Runs a crash cut short are failed and refunded before the first request (src/api/execute/recover-runs.ts).
  recoverInterruptedRuns(ctx);
  scheduleIdempotencyKeyPurge(ctx);
  const app = await buildApp(ctx, { logger: options.logger ?? false, trustProxy: options.trustProxy });
  scheduleWalCheckpoint(db, {
    intervalMs: options.walCheckpointIntervalMs ?? WAL_CHECKPOINT_INTERVAL_MS,
    signal: shutdown.signal,
    log: app.log,
  });
  app.addHook('onClose', async () => {
    shutdown.abort();
    await Promise.race([Promise.allSettled([...ctx.background]), delay(BACKGROUND_DRAIN_MS)]);
  });
  try {
    await app.listen({ host, port: options.port ?? 0 });
  } catch (error) {
    await app.close();
    db.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  ctx.urls.baseUrl = `http://${urlHost}:${port}`;
  ctx.urls.walletUrl = (env.SVC_WALLET_URL ?? `${ctx.urls.baseUrl}/wallet`).replace(/\/+$/, '');

  let closing: Promise<void> | undefined;
  return {
    app,
    ctx,
    db,
    secrets,
    baseUrl: ctx.urls.baseUrl,
    walletUrl: ctx.urls.walletUrl,
    close() {
      closing ??= app.close().then(() => {
        // Closing deletes the log only when no other connection (a backup, a shell) has the file open.
        checkpointWal(db, app.log);
        db.close();
      });
      return closing;
    },
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

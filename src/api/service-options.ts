// What startService takes: svc-api's flags and environment as options, each with its default named where it is used.
import type { FastifyServerOptions } from 'fastify';
import type { Clock } from '../lib/clock.js';
import type { OwnAgentPricing, RunTiming } from './context.js';
import type { BodyTimeout } from './http/body-timeout.js';
import type { ConnectionTimeouts } from './http/connection-timeouts.js';
import type { TrustProxy } from './http/trust-proxy.js';
import type { ListenAddress } from './ops/metrics-server.js';
import type { UploadQuota } from './agents/upload-quota.js';
import type { ArtifactLimits } from './artifacts/artifact-limits.js';

export interface ServiceOptions extends OwnAgentPricing {
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
  /** Leases, holds and timeouts of runs on the nodes (svc-api's flags); tests shorten them. */
  runTiming?: Partial<RunTiming>;
  /** The output of npm run release to serve (svc-api --releases-dir); none when unset. */
  releasesDir?: string;
  /** How often the WAL is emptied (src/api/wal-checkpoint.ts); tests shorten it. */
  walCheckpointIntervalMs?: number;
  /** Where GET /metrics is served (svc-api --metrics-listen); not at all when unset. */
  metricsListen?: ListenAddress;
  /** Nodes away this long are removed (svc-api --stale-node-after); 0 keeps them. Default 14 days. */
  staleNodeAfterMs?: number;
  /** When a stalled request body is cut off (svc-api --body-idle-seconds, --body-min-rate); routes may differ. */
  bodyTimeout?: Partial<BodyTimeout>;
  /** When a connection with no request being answered closes (svc-api --headers-timeout-seconds, --keep-alive-seconds). */
  connectionTimeouts?: Partial<ConnectionTimeouts>;
  /** Connections one client address may hold open (svc-api --max-connections-per-address); 0: no cap. */
  maxConnectionsPerAddress?: number;
  /** A user's stored bundles and versions (svc-api --upload-quota-mib, --upload-quota-versions); 0: no limit. */
  uploadQuota?: Partial<UploadQuota>;
  /** Upload requests per user and hour (svc-api --uploads-per-hour); 0: no limit. */
  uploadsPerHour?: number;
  /** Versions unused this long are removed (svc-api --version-retention); 0 keeps them. Default 90 days. */
  versionRetentionMs?: number;
  /** Sign-in codes one client address may ask for in an hour (svc-api --sign-in-codes-per-client). Default 30. */
  signInCodesPerClient?: number;
  /** Webhook deliveries may go to private, loopback and link-local addresses (svc-api --webhook-allow-private). */
  webhookAllowPrivate?: boolean;
  /** PEM certificates webhook deliveries trust besides the system's (svc-api --webhook-ca-file). */
  webhookCa?: string;
  /** Runs' artifacts: the per-user quota (svc-api --artifact-quota-mib); tests shrink the others. */
  artifactLimits?: Partial<ArtifactLimits>;
}

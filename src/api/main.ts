// The svc-api program: parses its flags, starts the service, prints the ready line, and on SIGTERM/SIGINT stops
// gracefully (docs/operations.md "Stopping svc-api"), then exits 0. `svc-api sandbox …` is a client of a running
// service instead (sandbox-cli.ts).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { SvcError } from '../contract/errors.js';
import type { RunTiming } from './context.js';
import { DEFAULT_SHUTDOWN_GRACE_MS, SMTP_URL_REQUIRED, startService } from './server.js';
import { parseTrustProxy, type TrustProxy } from './http/trust-proxy.js';
import { ConfigError, parseStaleNodeAfter, readEnvConfig, type EnvConfig } from './ops/env-config.js';
import { parseListenAddress, type ListenAddress } from './ops/metrics-server.js';
import { LIMIT_FLAGS, parseLimitFlags, type LimitOptions } from './ops/limit-flags.js';
import { parseWebhookFlags, WEBHOOK_FLAGS } from './ops/webhook-flags.js';
import { sandboxBesideStripe } from './payments/provider.js';

const USAGE = `Usage: svc-api --port <n> --data-dir <dir> [--host 127.0.0.1] [--sandbox]
       svc-api sandbox pay|confirm|fund …   (svc-api sandbox --help)
       svc-api backup --data-dir <dir> --out <file>   (svc-api backup --help)

The reference implementation of the hosted service: every endpoint of the spec on SQLite, or on
PostgreSQL with SVC_DATABASE_URL (several instances on one database).

Options:
  --port <n>            port to listen on (0 picks a free one)            default 8787
  --data-dir <dir>      where the SQLite file and generated secrets live   required
  --host <addr>         address to listen on                               default 127.0.0.1
  --sandbox             serve the sandbox payment provider at /sandbox (not with
                        SVC_PAYMENT_PROVIDER=stripe)
  --lease-seconds <s>   how long a node holds a run, and counts as online, without polling; a run
                        whose node stops polling is failed node_lost and refunded after it  default 45
  --execute-wait-seconds <s>  how long execute waits for the node's result before answering 202   default 30
  --queue-timeout-seconds <s> a run no node takes within this is failed not_picked_up, refunded   default 600
  --rate-limit <n>      requests a minute per client address, one budget across auth, paygate,
                        enroll and the wallet sign-in                      default 600
  --trust-proxy <list>  take the client address from X-Forwarded-For when the peer is one of
                        these addresses or CIDRs (comma-separated), or true for any peer;
                        without it the header is ignored                   default false
  --releases-dir <dir>  serve the swarm-node releases in it (the output of npm run release) at
                        /v1/swarm/releases, and install.sh at /install.sh      default: none
  --shutdown-grace <s>  on SIGTERM, seconds the requests in flight get to finish (executes waiting for
                        a node's result; the results still come in)            default 25
  --metrics-listen <host:port>  serve Prometheus metrics at http://host:port/metrics, a listener
                        apart from the API's (keep it private)             default off
  --stale-node-after <d>  remove a node from its user's nodes once it has neither polled nor run
                        anything for this long (1h to 365d: 36h, 14d, 30d): its agents withdrawn,
                        its credential answered 410 node_removed; 0 or off keeps them   default 14d
  --body-idle-seconds <s>  cut a request body off (408) once it pauses this long     default 30
  --body-min-rate <B/s> after the first --body-idle-seconds, cut a body off (408) once it has come
                        slower than this many bytes a second on average; 0: no minimum   default 1024
  --headers-timeout-seconds <s>  close a connection (408) whose request headers are not all in this
                        long after it opened or its request began (sends nothing, never finishes)  default 30
  --keep-alive-seconds <s>  close a connection idle this long between two of its requests   default 72
  --max-connections-per-address <n>  connections one client address may hold open; more are
                        closed at once (not the --trust-proxy proxies'); 0: no cap     default 256
  --upload-quota-mib <n>  MiB of agent bundles one user may keep stored; an upload over it is
                        refused 413 upload_quota_exceeded; 0: no limit             default 256
  --upload-quota-versions <n>  agent versions one user may keep, all agents; 0: no limit   default 500
  --uploads-per-hour <n>  agent uploads one user may make in an hour (429 beyond); 0: none  default 60
  --sign-in-codes-per-client <n>  sign-in codes one client address may ask for in an hour, all
                        addresses together (raise it for many users behind one NAT)   default 30
  --version-retention <d>  remove an uploaded version unused this long (1h to 365d), never the
                        current one, the one before it, or one a run not finished is pinned
                        to; 0 or off keeps them                                default 90d
  --own-agent-price-cents <n>  what one run of a user's own agent (not a catalog SKU) costs, in
                        cents, 1 to 10000                                     default 2
  --webhook-allow-private  let webhooks go to private, loopback and link-local addresses (receivers
                        on the service's own network; tests)                   default: refused
  --webhook-ca-file <f> PEM certificates webhook deliveries trust besides the system's
  --artifact-quota-mib <n>  MiB of run artifacts one user may keep stored (each content once);
                        an upload over it is refused 413 artifact_quota_exceeded; 0: no limit  default 1024
  --artifact-idle-seconds <s>  cut an artifact upload off (408) once it pauses this long     default 60
  -h, --help            show this help
  -v, --version         show the version

Environment:
  SVC_JWT_SECRET      HS256 key, base64url of at least 32 bytes (generated into the data dir when unset)
  SVC_WEBHOOK_SECRET  payment webhook HMAC key (generated into the data dir when unset)
  SVC_SECRETS_KEY     AES-256-GCM key of users' secrets and webhook signing secrets at rest, base64url
                      of 32 bytes (generated into the data dir when unset)
  SVC_SECRETS_PREVIOUS_KEYS  keys a rotation replaced, comma-separated: still read, and their values
                      sealed again under SVC_SECRETS_KEY (docs/operations.md "Secrets at rest")
  SVC_MERCHANT_ID     this service's merchant id                         default merchant_local
  SVC_PUBLIC_URL      where clients reach this service (https://svc.example.com): install.sh's
                      default and the release URLs name it                default http://HOST:PORT
  SVC_WALLET_URL      public wallet base URL                             default SVC_PUBLIC_URL/wallet
  SVC_SMTP_URL        smtp://USER:PASSWORD@HOST:PORT (or smtps://): the relay sign-in codes and notices
                      go through; required unless --sandbox (which also keeps them in its outbox)
  SVC_MAIL_FROM       the From: of the service's mail                  default svc <no-reply@localhost>
  SVC_LOG_LEVEL       fatal, error, warn, info, debug, trace or silent   default info
  SVC_METRICS_LISTEN  as --metrics-listen (the flag wins)
  SVC_STALE_NODE_AFTER  as --stale-node-after (the flag wins)
  SVC_DATABASE_URL    postgres://USER:PASSWORD@HOST:PORT/DB: store in PostgreSQL, shared by every
                      instance on it (docs/operations.md); unset: the SQLite file in --data-dir
  SVC_PAYMENT_PROVIDER  sandbox or stripe: who confirms payments           default sandbox
                      sandbox: the --sandbox books, or only webhooks signed with SVC_WEBHOOK_SECRET;
                      stripe: Stripe's webhook to /v1/payments/webhook and its API (docs/operations.md)
  SVC_STRIPE_SECRET_KEY  with stripe, required: the API key, sk_… or a restricted rk_…
  SVC_STRIPE_WEBHOOK_SECRET  with stripe, required: the webhook endpoint's signing secret, whsec_…
  SVC_STRIPE_API_BASE  with stripe: where the API is (a stand-in)         default https://api.stripe.com
Each is checked at start: a wrong value stops svc-api with exit 2 and names the variable.

Operations (docs/operations.md "Running svc-api"): GET /healthz, GET /readyz, GET /openapi.json on the API's
port; X-Request-Id taken (or made) and returned on every answer, and in every log line as request_id.

Sandbox commands, against a running svc-api --sandbox (--base-url, default http://127.0.0.1:8787; --json):
  svc-api sandbox pay --offer <tier_id> --email <e> [--amount <dollars>]   a checkout, PENDING
  svc-api sandbox confirm <payment_id>      confirm it; waits until the service has the webhook
  svc-api sandbox fund --email <e> --amount <dollars>   fund that user's wallet, credited
  svc-api sandbox mail --to <e>             the mail the sandbox sent that address, newest first

Examples:
  svc-api --sandbox --port 8787 --data-dir ./.svc-api-data
  svc-api --port 8787 --data-dir /var/lib/svc-api --trust-proxy 127.0.0.1   # behind a local TLS proxy
  svc-api --port 8787 --data-dir /var/lib/svc-api --metrics-listen 127.0.0.1:9464
  svc-api --port 8787 --data-dir /var/lib/svc-api   # SVC_PAYMENT_PROVIDER=stripe + its secrets set: Stripe
  svc-api --port 8787 --data-dir /var/lib/svc-api --stale-node-after 30d   # keep offline nodes a month
  svc-api --port 8787 --data-dir /var/lib/svc-api --upload-quota-mib 1024 --version-retention 365d
  svc-api backup --data-dir /var/lib/svc-api --out /var/backups/svc-api-$(date -u +%Y%m%dT%H%M%SZ).db
  svc-api sandbox fund --email you@example.com --amount 5.00
`;

declare const SVC_VERSION: string | undefined;

async function main(): Promise<number> {
  const [first, ...rest] = process.argv.slice(2);
  if (first === 'sandbox') {
    const { runSandboxCommand } = await import('./sandbox-cli.js');
    return runSandboxCommand(rest);
  }
  if (first === 'backup') {
    const { runBackupCommand } = await import('./ops/backup.js');
    return runBackupCommand(rest);
  }
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string', default: '8787' },
        host: { type: 'string', default: '127.0.0.1' },
        'data-dir': { type: 'string' },
        sandbox: { type: 'boolean', default: false },
        'lease-seconds': { type: 'string' },
        'execute-wait-seconds': { type: 'string' },
        'queue-timeout-seconds': { type: 'string' },
        'rate-limit': { type: 'string' },
        'trust-proxy': { type: 'string' },
        'shutdown-grace': { type: 'string' },
        'metrics-listen': { type: 'string' },
        'releases-dir': { type: 'string' },
        'stale-node-after': { type: 'string' },
        'own-agent-price-cents': { type: 'string' },
        ...LIMIT_FLAGS,
        ...WEBHOOK_FLAGS,
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', short: 'v', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    process.stderr.write(`svc-api: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.version) {
    process.stdout.write(`${typeof SVC_VERSION === 'string' ? SVC_VERSION : 'dev'}\n`);
    return 0;
  }
  const port = Number(values.port);
  const rateLimit = values['rate-limit'] === undefined ? 600 : Number(values['rate-limit']);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usageError(`--port must be 0 to 65535, got ${values.port}`);
  if (!Number.isInteger(rateLimit) || rateLimit < 1) return usageError(`--rate-limit must be a positive whole number`);
  const timing: Partial<RunTiming> = {};
  for (const [flag, key, min, max] of [
    ['lease-seconds', 'leaseMs', 5, 3600],
    ['execute-wait-seconds', 'executeWaitMs', 0, 300],
    ['queue-timeout-seconds', 'queueTimeoutMs', 1, 86_400],
  ] as const) {
    const text = values[flag];
    if (text === undefined) continue;
    const seconds = Number(text);
    if (!/^\d+$/.test(text) || seconds < min || seconds > max) return usageError(`--${flag} must be whole seconds from ${min} to ${max}`);
    timing[key] = seconds * 1000;
  }
  const graceSeconds = values['shutdown-grace'] === undefined ? DEFAULT_SHUTDOWN_GRACE_MS / 1000 : Number(values['shutdown-grace']);
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0)
    return usageError('--shutdown-grace must be a whole number of seconds, 0 or more');
  if (values['data-dir'] === undefined) return usageError('--data-dir is required');
  let trustProxy: TrustProxy = false;
  let metricsListen: ListenAddress | undefined;
  try {
    if (values['trust-proxy'] !== undefined) trustProxy = parseTrustProxy(values['trust-proxy']);
  } catch (error) {
    return usageError((error as Error).message);
  }
  try {
    if (values['metrics-listen'] !== undefined) metricsListen = parseListenAddress(values['metrics-listen']);
  } catch (error) {
    return usageError(`--metrics-listen ${(error as Error).message}`);
  }
  let staleNodeAfterMs: number | undefined;
  try {
    if (values['stale-node-after'] !== undefined) staleNodeAfterMs = parseStaleNodeAfter(values['stale-node-after']);
  } catch (error) {
    return usageError(`--stale-node-after ${(error as Error).message}`);
  }
  const ownPrice = values['own-agent-price-cents'];
  if (ownPrice !== undefined && (!/^\d+$/.test(ownPrice) || Number(ownPrice) < 1 || Number(ownPrice) > 10_000))
    return usageError('--own-agent-price-cents must be a whole number of cents from 1 to 10000');
  let limits: LimitOptions & ReturnType<typeof parseWebhookFlags>;
  try {
    limits = { ...parseLimitFlags(values), ...parseWebhookFlags(values) };
  } catch (error) {
    return usageError((error as Error).message);
  }

  // Before anything is opened or created: a wrong variable changes nothing.
  let config: EnvConfig;
  try {
    config = readEnvConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`svc-api: ${error.message.split('\n').join('\nsvc-api: ')}\n`);
    return 2;
  }
  if (values.sandbox && config.paymentProvider === 'stripe') return usageError(sandboxBesideStripe().message);
  if (!values.sandbox && process.env.SVC_SMTP_URL === undefined) return usageError(SMTP_URL_REQUIRED);

  const staleAfter = staleNodeAfterMs ?? config.staleNodeAfterMs;

  // The database and generated keys hold e-mails and secrets: nothing this process creates is readable by others.
  process.umask(0o077);
  const level = config.logLevel;
  const service = await startService({
    port,
    host: values.host,
    dataDir: values['data-dir'],
    sandbox: values.sandbox,
    rateLimitPerMinute: rateLimit,
    trustProxy,
    runTiming: timing,
    metricsListen: metricsListen ?? config.metricsListen,
    ...(staleAfter === undefined ? {} : { staleNodeAfterMs: staleAfter }),
    ...(values['releases-dir'] === undefined ? {} : { releasesDir: resolve(values['releases-dir']) }),
    ...limits,
    ...(ownPrice === undefined ? {} : { ownAgentPriceCents: Number(ownPrice) }),
    // Logs go to stderr so stdout carries only the ready line; a request is logged without its query string.
    logger: level === 'silent' ? false : { level, stream: process.stderr },
  });
  process.stdout.write(`svc-api listening on ${service.baseUrl}\n`);
  if (service.metricsUrl !== undefined) process.stdout.write(`svc-api metrics on ${service.metricsUrl}\n`);

  // The listeners stay for the life of the process, never `once`: a library's signal-exit hook re-raises a signal
  // when it finds itself the only listener left, and that killed svc-api in the middle of its drain. A second
  // signal cuts the grace short.
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (): void => {
      signals += 1;
      if (signals === 1) resolve();
      else void service.close({ graceMs: 0 });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await service.close({ graceMs: graceSeconds * 1000 });
  return 0;
}

function usageError(message: string): number {
  process.stderr.write(`svc-api: ${message}\n\n${USAGE}`);
  return 2;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof SvcError ? `${error.message}${error.remedy ? `\n${error.remedy}` : ''}` : (error as Error).message;
    process.stderr.write(`svc-api: ${message}\n`);
    process.exitCode = 1;
  },
);

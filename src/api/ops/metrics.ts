// The service's Prometheus metrics (docs/operations.md "Metrics"), one registry per service so that several
// services in one process (the tests) never mix their figures. Counters count what this instance did, after the
// fact (a run's charge once its transaction committed); gauges read the shared state from the database at scrape
// time (store-probe.ts), the same on every instance.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { StoreProbe } from './store-probe.js';

/** Where a database error was met: a request, the background sweep of runs, a scrape or a readiness check. */
const DATABASE_ERROR_SOURCES = ['request', 'sweep', 'scrape', 'readiness'] as const;
export type DatabaseErrorSource = (typeof DATABASE_ERROR_SOURCES)[number];

/** How the service answered a webhook delivery. */
const WEBHOOK_OUTCOMES = ['applied', 'duplicate', 'ignored', 'bad_signature', 'invalid', 'failed'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

export interface ServiceMetrics {
  readonly registry: Registry;
  /** One answered HTTP request; `route` is the route's pattern (never the URL, whose ids would be unbounded). */
  request(method: string, route: string, status: number, seconds: number): void;
  /** A new run was charged `chargedCents` (its transaction committed). */
  runAccepted(chargedCents: number): void;
  /** A run finished; `reason` is a failed run's output.error; `refundedCents` what the failure gave back. */
  runFinished(status: 'succeeded' | 'failed', reason: string | undefined, refundedCents: number): void;
  webhookDelivery(outcome: WebhookOutcome): void;
  databaseError(source: DatabaseErrorSource): void;
}

/**
 * The failure reasons that become a label (docs/api.md, execute's `output.error`: the node's and the service's). A
 * node reports its own words there; anything else counts as "other", so a node cannot grow the series without bound.
 */
const KNOWN_FAILURE_REASONS = new Set([
  'timeout',
  'exit',
  'bad_output',
  'spawn',
  'bundle',
  'aborted',
  'interrupted',
  'memory_limit',
  'task_limit',
  'disk_quota',
  'declared_failure',
  'node_lost',
  'not_picked_up',
]);

/** Fast answers (the catalog, a token) to execute's and the long poll's holds of tens of seconds. */
const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export interface MetricsOptions {
  probe: StoreProbe;
  /** The epoch-ms time from which a node's last poll counts as online (now minus the lease). */
  onlineSince: () => number;
}

/**
 * The process' own figures (CPU, memory, event loop, GC), collected once per process: they describe the process,
 * not a service in it, and each collection installs observers that stay for the life of the process.
 */
let processRegistry: Registry | undefined;

export function createServiceMetrics(options: MetricsOptions): ServiceMetrics {
  const own = new Registry();
  const registers = [own];

  const requests = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status; its _count is the request rate.',
    labelNames: ['method', 'route', 'status'],
    buckets: LATENCY_BUCKETS_SECONDS,
    registers,
  });
  const accepted = new Counter({ name: 'svc_runs_accepted_total', help: 'Runs accepted and charged by this instance.', registers });
  const finished = new Counter({
    name: 'svc_runs_finished_total',
    help: 'Runs this instance finished, by final status and, for a failed run, its reason (output.error).',
    labelNames: ['status', 'reason'],
    registers,
  });
  const charged = new Counter({ name: 'svc_charged_cents_total', help: 'Cents debited from wallets for accepted runs.', registers });
  const refunded = new Counter({ name: 'svc_refunded_cents_total', help: 'Cents given back for runs that failed.', registers });
  const webhooks = new Counter({
    name: 'svc_webhook_deliveries_total',
    help: 'Payment webhook deliveries received, by how the service answered them.',
    labelNames: ['outcome'],
    registers,
  });
  const databaseErrors = new Counter({
    name: 'svc_database_errors_total',
    help: 'Errors from the database, by where they were met.',
    labelNames: ['source'],
    registers,
  });

  // Every series exists from the start at 0, so a rate over the first event is right and an alert sees no gap.
  finished.inc({ status: 'succeeded', reason: '' }, 0);
  for (const outcome of WEBHOOK_OUTCOMES) webhooks.inc({ outcome }, 0);
  for (const source of DATABASE_ERROR_SOURCES) databaseErrors.inc({ source }, 0);

  const countFailure = (error: unknown): void => {
    if (isDatabaseError(error)) databaseErrors.inc({ source: 'scrape' });
  };
  new Gauge({
    name: 'svc_runs',
    help: 'Runs not finished yet, by status (the whole service, read from the database).',
    labelNames: ['status'],
    registers,
    async collect() {
      try {
        const inFlight = await options.probe.runsInFlight();
        this.set({ status: 'queued' }, inFlight.queued);
        this.set({ status: 'running' }, inFlight.running);
      } catch (error) {
        // No figure rather than a stale one; the scrape itself still answers, with the error counted.
        this.reset();
        countFailure(error);
      }
    },
  });
  new Gauge({
    name: 'svc_nodes_online',
    help: 'Enrolled nodes that polled within the lease time (the whole service, read from the database).',
    registers,
    async collect() {
      try {
        this.set(await options.probe.nodesSeenSince(options.onlineSince()));
      } catch (error) {
        this.reset();
        countFailure(error);
      }
    },
  });

  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    // prom-client names three gauges as counters are named (`promtool check metrics` flags each); the same figures,
    // by type, are in nodejs_active_handles, _requests and _resources, whose sum each of them is.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
      processRegistry.removeSingleMetric(name);
    }
  }
  return {
    // After every metric of the service is registered: merge copies the registries' metrics as they are now.
    registry: Registry.merge([processRegistry, own]),
    request: (method, route, status, seconds) => requests.observe({ method, route, status: String(status) }, seconds),
    runAccepted(chargedCents) {
      accepted.inc();
      if (chargedCents > 0) charged.inc(chargedCents);
    },
    runFinished(status, reason, refundedCents) {
      const label = status === 'succeeded' ? '' : reason !== undefined && KNOWN_FAILURE_REASONS.has(reason) ? reason : 'other';
      finished.inc({ status, reason: label });
      if (refundedCents > 0) refunded.inc(refundedCents);
    },
    webhookDelivery: (outcome) => webhooks.inc({ outcome }),
    databaseError: (source) => databaseErrors.inc({ source }),
  };
}

/**
 * An error raised by the database engine: better-sqlite3's SqliteError (codes SQLITE_*), or a PostgreSQL server's
 * error as the pg driver raises it (a five-character SQLSTATE with a severity).
 */
export function isDatabaseError(error: unknown): boolean {
  const candidate = error as { code?: unknown; severity?: unknown; name?: unknown } | null;
  if (candidate === null || typeof candidate !== 'object') return false;
  if (candidate.name === 'SqliteError') return true;
  if (typeof candidate.code !== 'string') return false;
  return candidate.code.startsWith('SQLITE_') || (typeof candidate.severity === 'string' && /^[0-9A-Z]{5}$/.test(candidate.code));
}

// A run as the API shows it (RunResponse): execute's answer (200 when finished in time, 202 while queued or
// running), GET /v1/swarm/runs/{run_id}, and a node's result acknowledgement.
import type { RunResponse, RunStatus } from '../../contract/schemas.js';
import { isoTime } from '../../lib/clock.js';
import type { Lease, RunRow } from './run-store.js';

export function isFinished(row: Pick<RunRow, 'status'>): boolean {
  return row.status === 'succeeded' || row.status === 'failed';
}

/** The status shown: a run that ended cancelled is stored `failed` with cancelled_at (store/jobs-migration.ts). */
export function shownStatus(row: Pick<RunRow, 'status' | 'cancelled_at'>): RunStatus {
  return row.cancelled_at !== null && row.status === 'failed' ? 'cancelled' : row.status;
}

/**
 * `lease` only for the node that holds the run: it is what the node's result must carry; `seconds`, how long it runs
 * from when the service received the request (leaseSecondsFrom).
 */
export function runView(row: RunRow, balanceCents: number, lease?: Lease & { seconds?: number }): RunResponse {
  return {
    run_id: row.run_id,
    agent_id: row.agent_id,
    status: shownStatus(row),
    charged_cents: row.charged_cents,
    balance_cents: balanceCents,
    output: row.output_json === null ? null : (JSON.parse(row.output_json) as unknown),
    started_at: isoTime(row.started_at),
    finished_at: row.finished_at === null ? null : isoTime(row.finished_at),
    node_id: row.node_id,
    ...(row.bundle_digest === null ? {} : { bundle_digest: row.bundle_digest }),
    ...(lease === undefined
      ? {}
      : {
          lease: {
            lease_id: lease.lease_id,
            expires_at: isoTime(lease.expires_at),
            ...(lease.seconds === undefined ? {} : { seconds: lease.seconds }),
          },
        }),
    ...(row.timeout_seconds === null ? {} : { timeout_seconds: row.timeout_seconds }),
    attempt: row.attempt,
    queue_expires_at: row.status === 'queued' && row.queue_deadline_at !== null ? isoTime(row.queue_deadline_at) : null,
    cancel_requested_at: row.cancel_requested_at === null ? null : isoTime(row.cancel_requested_at),
    ...(row.trigger === null ? {} : { trigger: row.trigger }),
  };
}

/**
 * A lease as seconds from when the service received the request that hands or renews it (docs/api.md "Leases as
 * durations"): what is left of it now by the service's clock, plus the time the request has taken so far on this
 * process's monotonic clock. A node counts them from when it sent the request, so it never reckons the lease longer
 * than the service does, and no wall clock but the service's own enters it.
 */
export function leaseSecondsFrom(expiresAt: number, now: number, receivedAt: number): number {
  return Math.max(0, Math.round(expiresAt - now + (performance.now() - receivedAt))) / 1000;
}

// A run's statuses (docs/api.md "Runs on the node", "Cancel"), apart from the schemas: the CLI's light paths read them.

/**
 * queued: charged, waiting for a node; running: a node holds its lease; then one of the final statuses. cancelled:
 * stopped by its user (POST /v1/swarm/runs/{run_id}/cancel), refunded like a failure (docs/api.md "Cancel").
 */
export const RUN_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const FINISHED_RUN_STATUSES = ['succeeded', 'failed', 'cancelled'] as const;
export type FinishedRunStatus = (typeof FINISHED_RUN_STATUSES)[number];
export function isFinishedStatus(status: string): status is FinishedRunStatus {
  return (FINISHED_RUN_STATUSES as readonly string[]).includes(status);
}

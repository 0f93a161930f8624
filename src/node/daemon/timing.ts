// The daemon's timing, in one place: its tick, the slow re-checks' backoff and the drain after a stop signal. The
// daemon command's --help states them from here.

export const DEFAULT_TICK_MS = 1_000;
/** First wait of the slow re-checks: balance, an unreachable service, a refused token, unsettled rows. */
export const DEFAULT_BACKOFF_MS = 30_000;
/** The slow re-checks double up to this. */
export const MAX_BACKOFF_MS = 10 * 60_000;
/**
 * An unreachable service is asked again this soon, doubling to the cap and starting over once it answers: an outage
 * ends for this node within a cap (and a probe) of the service's return, and an outage only a failed probe extends.
 */
export const OUTAGE_PROBE_FIRST_MS = 500;
export const OUTAGE_PROBE_CAP_MS = 2_000;
/** In-flight runs get this long after SIGTERM (systemd's TimeoutStopSec is 30 s); their rows stay pending after. */
export const DEFAULT_DRAIN_MS = 20_000;
/** After the drain, agents still running are stopped and their failed runs get this long to be reported. */
export const REPORT_GRACE_MS = 5_000;

/** The wait after `previousMs` (none yet: `initialMs`), doubling up to MAX_BACKOFF_MS. */
export function nextBackoff(previousMs: number | undefined, initialMs: number): number {
  if (previousMs === undefined) return Math.min(initialMs, MAX_BACKOFF_MS);
  return Math.min(Math.max(previousMs * 2, initialMs), MAX_BACKOFF_MS);
}

/** "30 s", "10 min": a duration as --help states it. */
export function spokenDuration(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}
